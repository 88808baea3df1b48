import { invalidArgument } from '../internal-api.js'

export interface ServeConfig {
  store: string | undefined
  host: string
  port: number
  dataDir: string | undefined
  tokensFile: string | undefined
}

/** Flags win over BATON_* variables, which win over defaults. Pure: no I/O. */
export function resolveServeConfig(flags: Partial<Record<'store' | 'host' | 'port' | 'data-dir' | 'tokens', string>>, env: NodeJS.ProcessEnv): ServeConfig {
  const pick = (flag: keyof typeof flags, variable: string) => flags[flag] ?? (env[variable] || undefined)
  const portText = pick('port', 'BATON_PORT') ?? '7420'
  const port = Number(portText)
  if (!/^\d+$/.test(portText) || port > 65535) throw invalidArgument(`--port (or BATON_PORT) must be a port number 0-65535, got "${portText}"`)
  return {
    store: pick('store', 'BATON_URL'),
    host: pick('host', 'BATON_HOST') ?? '127.0.0.1',
    port,
    dataDir: pick('data-dir', 'BATON_DATA_DIR'),
    tokensFile: pick('tokens', 'BATON_TOKENS_FILE'),
  }
}
