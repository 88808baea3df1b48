/**
 * The baseline of the server benchmark: a bare node:http server answering
 * every request with a fixed JSON body. Run as its own process; prints
 * "listening <port>".
 */
import { createServer } from 'node:http'

const BODY = JSON.stringify({ leaseId: 'x'.repeat(120), name: 'bench', token: '1', expiresAt: 0, ttlMs: 10_000, owner: 'o', mode: 'exclusive' })
const server = createServer((request, response) => {
  request.resume()
  request.on('end', () => {
    response.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(BODY) })
    response.end(BODY)
  })
})
server.listen(0, '127.0.0.1', () => {
  const address = server.address()
  console.log(`listening ${typeof address === 'object' && address ? address.port : 0}`)
})
