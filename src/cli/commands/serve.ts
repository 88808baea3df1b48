import { parseArgs } from 'node:util'
import { Baton } from '../../baton.js'
import { connect } from '../../connect.js'
import { newClientId } from '../../core/owner.js'
import { parseStoreUrl } from '../../core/url.js'
import { createPrivateMemoryDriver } from '../../drivers/memory/index.js'
import { TokenAuth } from '../../server/auth.js'
import { DataDir } from '../../server/data-dir.js'
import { createLockServer } from '../../server/index.js'
import { DEFAULT_WAIT_CAPS } from '../../server/limits.js'
import { invalidArgument } from '../../core/errors.js'
import { resolveServeConfig } from '../config.js'

export const SERVE_USAGE = `  baton serve [--store URL] [--host 127.0.0.1] [--port 7420] [--data-dir DIR] [--tokens FILE]
              [--max-waiters 10000] [--max-waiters-per-name 1000]
      the lock server (HTTP/JSON API, /openapi.json, /metrics); env BATON_URL, BATON_HOST,
      BATON_PORT, BATON_DATA_DIR, BATON_TOKENS_FILE; flags win`

/** `baton serve`: runs until SIGTERM / SIGINT, then shuts down gracefully. */
export async function serve(args: string[], out: (line: string) => void): Promise<number> {
  const { values } = parseArgs({
    args,
    strict: true,
    options: {
      store: { type: 'string' }, host: { type: 'string' }, port: { type: 'string' },
      'data-dir': { type: 'string' }, tokens: { type: 'string' },
      'max-waiters': { type: 'string' }, 'max-waiters-per-name': { type: 'string' },
    },
  })
  const config = resolveServeConfig(values, process.env)
  const auth = config.tokensFile ? TokenAuth.load(config.tokensFile) : undefined
  const embedded = !config.store || parseStoreUrl(config.store).scheme === 'memory'
  // The embedded store is private to this server, with tokens from --data-dir when given.
  const dataDir = embedded && config.dataDir ? new DataDir(config.dataDir) : undefined
  const baton = embedded
    ? new Baton(createPrivateMemoryDriver(dataDir?.nextToken), newClientId())
    : await connect(config.store)
  const waitCaps = {
    total: count(values['max-waiters'], '--max-waiters', DEFAULT_WAIT_CAPS.total),
    perName: count(values['max-waiters-per-name'], '--max-waiters-per-name', DEFAULT_WAIT_CAPS.perName),
  }
  const server = await createLockServer({ baton, waitCaps, ...(auth ? { auth } : {}), ...(dataDir ? { dataDir } : {}) })
  const address = await server.listen(config.host, config.port)

  const store = embedded ? 'the embedded memory store' : parseStoreUrl(config.store).display
  const notes = [
    auth ? 'bearer tokens required' : 'OPEN: no --tokens, anyone who can reach it can lock and force-release',
    embedded && !dataDir ? 'tokens restart at 1 when the server restarts (use --data-dir to keep them increasing)' : '',
    dataDir && dataDir.restartDelayLeftMs() > 0 ? `restarted: grants resume in ${Math.ceil(dataDir.restartDelayLeftMs() / 1000)} s` : '',
    !embedded && config.dataDir ? '--data-dir is not used: the store keeps its own state' : '',
  ].filter(Boolean)
  out(`baton serve: listening on ${address} with ${store}; ${notes.join('; ')}`)
  out(`try: curl -s -X POST -H 'content-type: application/json' -d '{"ttl":"30s","wait":"5s"}' ${address}/v1/locks/demo/acquire`)

  await new Promise<void>((resolve) => {
    const stop = (signal: string) => {
      out(`baton serve: ${signal}, shutting down (waiting requests get 503, held leases run to their ttl)`)
      process.off('SIGTERM', onTerm)
      process.off('SIGINT', onInt)
      server.close().then(resolve, (error: unknown) => {
        console.error(`baton serve: shutdown: ${(error as Error).message}`)
        resolve()
      })
    }
    const onTerm = () => stop('SIGTERM')
    const onInt = () => stop('SIGINT')
    process.on('SIGTERM', onTerm)
    process.on('SIGINT', onInt)
  })
  return 0
}

function count(text: string | undefined, flag: string, fallback: number): number {
  if (text === undefined) return fallback
  const value = Number(text)
  if (!/^\d+$/.test(text) || value < 1) throw invalidArgument(`${flag} must be a whole number of at least 1, got "${text}"`)
  return value
}
