/**
 * Loaded with `node --import` into a tool the tests run (redocly, the client
 * generator): every outgoing connection to anything but loopback is refused
 * and reported on stderr, so a test can show the tool works offline.
 */
import net from 'node:net'

export const OFFLINE_MARK = 'baton-offline-guard: blocked'

const loopback = (host: unknown) => host === undefined || host === 'localhost' || /^127\.|^::1$|^::ffff:127\./.test(String(host))

const connect = net.Socket.prototype.connect
net.Socket.prototype.connect = function guarded(this: net.Socket, ...args: unknown[]) {
  const first = args[0] as { host?: string; port?: number; path?: string } | number | string
  const options = Array.isArray(first) ? (first[0] as { host?: string; port?: number; path?: string }) : first
  const host = typeof options === 'object' ? (options.path ? 'localhost' : options.host) : typeof args[1] === 'string' ? args[1] : undefined
  if (!loopback(host)) {
    process.stderr.write(`${OFFLINE_MARK} ${String(host)}\n`)
    process.nextTick(() => this.destroy(new Error(`offline: connection to ${String(host)} refused by the test`)))
    return this
  }
  return (connect as (...a: unknown[]) => net.Socket).apply(this, args)
} as typeof net.Socket.prototype.connect
