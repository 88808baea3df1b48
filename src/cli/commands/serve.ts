import { homedir, hostname, networkInterfaces } from 'node:os'
import { join } from 'node:path'
import { parseArgs } from 'node:util'
import { Baton } from '../../baton.js'
import { connect } from '../../connect.js'
import { newClientId } from '../../core/owner.js'
import { parseStoreUrl } from '../../core/url.js'
import { createPrivateMemoryDriver } from '../../drivers/memory/index.js'
import { TokenAuth } from '../../server/auth.js'
import { DataDir } from '../../server/data-dir.js'
import { createLockServer } from '../../server/index.js'
import { DEFAULT_LEASE_CAPS, DEFAULT_TENANT_QUOTAS, DEFAULT_WAIT_CAPS, restartWaitOf } from '../../server/limits.js'
import { isLoopback } from '../../server/origin.js'
import type { TlsFiles } from '../../server/tls.js'
import { parseTtl } from '../../core/duration.js'
import { durationFlag } from '../common.js'
import { invalidArgument } from '../../core/errors.js'
import { resolveServeConfig } from '../config.js'

export const SERVE_USAGE = `  baton serve [--store URL] [--host 127.0.0.1] [--port 7420] [--data-dir DIR] [--tokens FILE]
              [--max-waiters 10000] [--max-waiters-per-name 1000] [--max-ttl 5m] [--max-lock-delay 1m]
              [--no-restart-wait] [--allowed-hosts a,b] [--allowed-origins https://x,…] [--max-connections 8192]
              [--max-waiters-per-token 2500] [--max-streams-per-token 256] [--max-holds-per-token 100000]
              [--max-sessions-per-token 1024] [--poll-max 50s] [--lease-secret SECRET]
              [--tls-cert FILE --tls-key FILE [--tls-ca FILE]] [--insecure]
      the lock server (HTTP/JSON API, /openapi.json, /metrics); env BATON_URL, BATON_HOST,
      BATON_PORT, BATON_DATA_DIR, BATON_TOKENS_FILE, BATON_LEASE_SECRET; flags win.
      --lease-secret (better: BATON_LEASE_SECRET, unseen by ps): the key lease ids are signed
      with, the same on every server of one store, at least 16 bytes; without it the store
      keeps one (Redlock: this process only)
      --tokens FILE: a JSON array of { "token", "name"?, "prefixes"?, "rights"? }; each token
      at least 16 characters without spaces (e.g. openssl rand -hex 24); rights "read",
      "lock" (the default) or "admin" (force-release); "name" is shown in forced-release events
      --tls-cert/--tls-key: serve HTTPS (PEM files, reloaded on SIGHUP and when they change);
      --tls-ca: clients must present a certificate signed by this CA. With --tokens, a --host
      other than loopback needs TLS, or --insecure (tokens and lease ids then cross in clear)`

/** `baton serve`: runs until SIGTERM / SIGINT, then shuts down gracefully. */
export async function serve(args: string[], out: (line: string) => void): Promise<number> {
  const { values } = parseArgs({
    args,
    strict: true,
    options: {
      store: { type: 'string' }, host: { type: 'string' }, port: { type: 'string' },
      'data-dir': { type: 'string' }, tokens: { type: 'string' },
      'max-waiters': { type: 'string' }, 'max-waiters-per-name': { type: 'string' },
      'max-ttl': { type: 'string' }, 'max-lock-delay': { type: 'string' }, 'no-restart-wait': { type: 'boolean' },
      'allowed-hosts': { type: 'string' }, 'allowed-origins': { type: 'string' }, 'max-connections': { type: 'string' },
      'max-waiters-per-token': { type: 'string' }, 'max-streams-per-token': { type: 'string' }, 'max-holds-per-token': { type: 'string' },
      'max-sessions-per-token': { type: 'string' }, 'poll-max': { type: 'string' }, 'lease-secret': { type: 'string' },
      'tls-cert': { type: 'string' }, 'tls-key': { type: 'string' }, 'tls-ca': { type: 'string' }, insecure: { type: 'boolean' },
    },
  })
  const config = resolveServeConfig(values, process.env)
  const auth = config.tokensFile ? TokenAuth.load(config.tokensFile) : undefined
  const tls = tlsFiles(values)
  if (auth && !tls && !isLoopback(config.host) && !values.insecure) {
    throw invalidArgument(`--host ${config.host} with --tokens needs --tls-cert and --tls-key: over plain HTTP every bearer token and lease id crosses the network readable by anyone on the path (--insecure to serve so anyway, e.g. behind a TLS-terminating proxy on the same host)`)
  }
  const embedded = !config.store || parseStoreUrl(config.store).scheme === 'memory'
  // The embedded store is private to this server, with tokens and lease ends kept in a data
  // directory: --data-dir, or by default one per port under the user's state directory, so
  // that a first start knows nothing can be held (no restart wait) and a restart waits only
  // for leases of the previous run that can still be live. --no-restart-wait without
  // --data-dir keeps nothing (the operator states no earlier lease can be live).
  let dataDirPath = config.dataDir ?? (embedded && !values['no-restart-wait'] ? defaultStateDir(config.port) : undefined)
  let dataDir: DataDir | undefined
  try {
    dataDir = embedded && dataDirPath ? new DataDir(dataDirPath) : undefined
  } catch (error) {
    // An explicit --data-dir must work; the default one may not (a read-only home): then no state, and the restart wait.
    if (config.dataDir) throw error
    dataDirPath = undefined
  }
  const baton = embedded
    ? new Baton(createPrivateMemoryDriver(dataDir?.nextToken), newClientId())
    : await connect(config.store)
  const waitCaps = {
    total: count(values['max-waiters'], '--max-waiters', DEFAULT_WAIT_CAPS.total),
    perName: count(values['max-waiters-per-name'], '--max-waiters-per-name', DEFAULT_WAIT_CAPS.perName),
  }
  const caps = {
    maxTtlMs: values['max-ttl'] === undefined ? DEFAULT_LEASE_CAPS.maxTtlMs : parseTtl(durationFlag(values['max-ttl'], '--max-ttl'), '--max-ttl'),
    maxLockDelayMs: values['max-lock-delay'] === undefined ? DEFAULT_LEASE_CAPS.maxLockDelayMs : durationFlag(values['max-lock-delay'], '--max-lock-delay', true),
  }
  // The in-process store forgets its leases with the process: unless --data-dir remembers, or the
  // operator says nothing of a previous run can be held, grants wait out the longest lease allowed.
  const restartWaitMs = embedded && !dataDir && !values['no-restart-wait'] ? restartWaitOf(caps) : 0
  const quotas = {
    waiters: count(values['max-waiters-per-token'], '--max-waiters-per-token', DEFAULT_TENANT_QUOTAS.waiters),
    streams: count(values['max-streams-per-token'], '--max-streams-per-token', DEFAULT_TENANT_QUOTAS.streams),
    holds: count(values['max-holds-per-token'], '--max-holds-per-token', DEFAULT_TENANT_QUOTAS.holds),
    sessions: count(values['max-sessions-per-token'], '--max-sessions-per-token', DEFAULT_TENANT_QUOTAS.sessions),
  }
  const list = (text: string | undefined) => text?.split(',').map((item) => item.trim()).filter(Boolean)
  const origins = { allowedHosts: list(values['allowed-hosts']) ?? [], allowedOrigins: list(values['allowed-origins']) ?? [] }
  const maxConnections = count(values['max-connections'], '--max-connections', 8192)
  // Longest plain JSON long-poll before "still waiting" (NDJSON streams heartbeat every third of it).
  const pollMaxMs = values['poll-max'] === undefined ? undefined : durationFlag(values['poll-max'], '--poll-max')
  // The flag wins over the variable, as every serve setting; the variable keeps the secret out of `ps`.
  const leaseSecret = values['lease-secret'] ?? (process.env.BATON_LEASE_SECRET || undefined)
  const server = await createLockServer({
    baton, waitCaps, caps, restartWaitMs, quotas, origins, maxConnections, privateStore: embedded,
    ...(pollMaxMs ? { pollMaxMs } : {}), ...(auth ? { auth } : {}), ...(dataDir ? { dataDir } : {}), ...(tls ? { tls, log: out } : {}),
    ...(leaseSecret !== undefined ? { leaseSecret } : {}),
  })
  await server.listen(config.host, config.port)
  const address = listenUrl(server.app.server.address(), config.host, tls ? 'https' : 'http')
  if (values.insecure && !tls && !isLoopback(config.host)) {
    console.error(`baton serve: WARNING: --insecure: plain HTTP on ${config.host}: bearer tokens, lease ids and session ids cross the network in clear; anyone who can read the traffic can lock, renew and release as any tenant. Use --tls-cert/--tls-key, or keep a TLS proxy on this host in front of it.`)
  }

  const store = embedded ? 'the embedded memory store' : parseStoreUrl(config.store).display
  const notes = [
    auth ? 'bearer tokens required' : 'OPEN: no --tokens, anyone who can reach it can lock and force-release',
    tls ? `TLS${tls.ca ? ', client certificates required' : ''}` : '',
    embedded && !dataDir ? 'tokens restart at 1 when the server restarts (use --data-dir to keep them increasing)' : '',
    dataDir && !config.dataDir ? `state in ${dataDirPath} (--data-dir to choose)` : '',
    dataDir && dataDir.restartDelayLeftMs() > 0 ? `restarted: grants resume in ${Math.ceil(dataDir.restartDelayLeftMs() / 1000)} s` : '',
    restartWaitMs > 0 ? `grants resume in ${Math.ceil(restartWaitMs / 1000)} s: without --data-dir a lease of a previous run may still be held (--no-restart-wait if none can be)` : '',
    !embedded && config.dataDir ? '--data-dir is not used: the store keeps its own state' : '',
    !embedded && server.leaseSecretSource === 'process'
      ? 'lease ids are signed with a secret of this process only (the store keeps no secret): servers sharing this store need the same --lease-secret to accept each other\'s' : '',
    !isLoopback(config.host) && origins.allowedHosts.length === 0 ? 'any Host header is answered (list this server\'s names with --allowed-hosts against DNS rebinding)' : '',
  ].filter(Boolean)
  out(`baton serve: listening on ${address.bound}${address.usable !== address.bound ? ` (every interface; from elsewhere: ${address.usable})` : ''} with ${store}; ${notes.join('; ')}`)
  // With --tokens, the line must carry a token to work when copied; the token itself is never printed.
  const bearer = auth ? `-H "authorization: Bearer $BATON_TOKEN" ` : ''
  const curlTls = tls ? `--cacert <the CA of ${tls.cert}> ${tls.ca ? '--cert <client.crt> --key <client.key> ' : ''}` : ''
  out(`try: ${auth ? 'BATON_TOKEN=<a token from the tokens file> ' : ''}curl -s -X POST ${curlTls}${bearer}-H 'content-type: application/json' -d '{"ttl":"30s","wait":"5s"}' ${address.local}/v1/locks/demo/acquire`)

  // SIGHUP: the tokens file again (revocation without a restart) and the TLS files (rotation);
  // a bad file keeps what is in force.
  const onHup = () => {
    if (server.reloadTls) {
      try {
        server.reloadTls()
        out(`baton serve: SIGHUP: reloaded the TLS certificate from ${tls!.cert}`)
      } catch (error) {
        console.error(`baton serve: SIGHUP: kept the previous TLS certificate: ${(error as Error).message.replace(/^baton: /, '')}`)
      }
    }
    if (!auth) return server.reloadTls ? undefined : out('baton serve: SIGHUP: no --tokens file to reload')
    try {
      out(`baton serve: SIGHUP: reloaded ${auth.reload()} tokens from ${config.tokensFile}`)
    } catch (error) {
      console.error(`baton serve: SIGHUP: kept the previous tokens: ${(error as Error).message.replace(/^baton: /, '')}`)
    }
  }
  process.on('SIGHUP', onHup)

  await new Promise<void>((resolve) => {
    const stop = (signal: string) => {
      out(`baton serve: ${signal}, shutting down (waiting requests get 503, held leases run to their ttl)`)
      process.off('SIGTERM', onTerm)
      process.off('SIGINT', onInt)
      process.off('SIGHUP', onHup)
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

/**
 * The URL as bound, and ones a person can use: an unspecified address
 * (0.0.0.0, ::) is not one to connect to, so `local` is the loopback and
 * `usable` this machine's first external address (or its host name).
 */
export function listenUrl(bound: ReturnType<import('node:net').Server['address']>, host: string, scheme: 'http' | 'https' = 'http'): { bound: string; local: string; usable: string } {
  const port = bound && typeof bound === 'object' ? bound.port : 0
  const ip = bound && typeof bound === 'object' ? bound.address : host
  const url = (address: string) => `${scheme}://${address.includes(':') ? `[${address}]` : address}:${port}`
  if (ip !== '0.0.0.0' && ip !== '::') return { bound: url(ip), local: url(ip), usable: url(ip) }
  const external = Object.values(networkInterfaces()).flat()
    .find((i) => i && !i.internal && (ip === '::' || i.family === 'IPv4'))
  return { bound: url(ip), local: url(ip === '::' ? '::1' : '127.0.0.1'), usable: url(external?.address ?? hostname()) }
}

/**
 * Where `baton serve` keeps its embedded store's state by default:
 * $BATON_STATE_DIR, else $XDG_STATE_HOME/baton, else ~/.local/state/baton, one
 * folder per port. None for port 0 (a new port each run) or without a home.
 */
export function defaultStateDir(port: number, env: NodeJS.ProcessEnv = process.env): string | undefined {
  if (port === 0) return undefined
  let base = env.BATON_STATE_DIR || (env.XDG_STATE_HOME ? join(env.XDG_STATE_HOME, 'baton') : undefined)
  if (!base) {
    try {
      base = join(homedir(), '.local', 'state', 'baton')
    } catch {
      return undefined
    }
  }
  return join(base, `serve-${port}`)
}

/** --tls-cert and --tls-key go together; --tls-ca (client certificates) only with them. */
function tlsFiles(values: { 'tls-cert'?: string; 'tls-key'?: string; 'tls-ca'?: string }): TlsFiles | undefined {
  const { 'tls-cert': cert, 'tls-key': key, 'tls-ca': ca } = values
  if (cert === undefined && key === undefined) {
    if (ca !== undefined) throw invalidArgument('--tls-ca (client certificates) needs --tls-cert and --tls-key')
    return undefined
  }
  if (cert === undefined || key === undefined) throw invalidArgument('--tls-cert and --tls-key go together: the server\'s certificate and its private key')
  return { cert, key, ...(ca !== undefined ? { ca } : {}) }
}

function count(text: string | undefined, flag: string, fallback: number): number {
  if (text === undefined) return fallback
  const value = Number(text)
  if (!/^\d+$/.test(text) || value < 1) throw invalidArgument(`${flag} must be a whole number of at least 1, got "${text}"`)
  return value
}

