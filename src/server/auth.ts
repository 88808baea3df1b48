import { createHash, timingSafeEqual } from 'node:crypto'
import { readFileSync } from 'node:fs'
import { invalidArgument } from '../core/errors.js'
import { validatePrefix } from '../core/names.js'
import { HttpError } from './http-errors.js'

export type Right = 'read' | 'lock' | 'admin'
const RIGHTS: readonly Right[] = ['read', 'lock', 'admin']

/** One entry of the tokens file, with the secret kept only as a SHA-256 hash. */
interface Grant {
  readonly hash: Buffer
  /** undefined: every name */
  readonly prefixes: readonly string[] | undefined
  readonly rights: ReadonlySet<Right>
  /** Shown in events as who forced a release; never the token. */
  readonly name: string | undefined
  /** Which entry of the file (for per-token quotas), stable across reloads as long as the token is. */
  readonly tenant: string
}

/**
 * What a token prefix covers: whole path segments. A prefix ending in "/"
 * covers the names that start with it; any other prefix covers the name
 * itself and the names under it and "/": "team1" covers "team1" and
 * "team1/x", never "team10/x".
 */
export function prefixCovers(prefix: string, name: string): boolean {
  if (prefix.endsWith('/')) return name.startsWith(prefix)
  return name.startsWith(prefix) && (name.length === prefix.length || name[prefix.length] === '/')
}

/**
 * Where the names a token may see lie, as store queries under a requested
 * list prefix: exact names, and prefixes whose names are all covered.
 */
export interface Scopes {
  readonly names: readonly string[]
  readonly prefixes: readonly string[]
}

function scopesOf(tokenPrefixes: readonly string[], requested: string): Scopes {
  const names = new Set<string>()
  const prefixes = new Set<string>()
  for (const p of tokenPrefixes) {
    const subtree = p.endsWith('/') ? p : `${p}/`
    if (!p.endsWith('/') && p.startsWith(requested)) names.add(p)
    if (requested.startsWith(subtree)) prefixes.add(requested)
    else if (subtree.startsWith(requested)) prefixes.add(subtree)
  }
  return { names: [...names], prefixes: [...prefixes] }
}

/** What a request may do, after its bearer token was checked. */
export interface Access {
  allows(right: Right, name: string): boolean
  /** Whether some name under `prefix` could be allowed (for list and events). */
  coversPrefix(name: string): boolean
  /** Where to look for the names under `prefix` this token may see; undefined: all of them. */
  scopes(prefix: string): Scopes | undefined
  /** Not limited to prefixes (metrics are about every name). */
  readonly everyName: boolean
  /** The token's name from the tokens file, when it has one. */
  readonly name?: string
  /** Who counts against per-token quotas: the token's entry ('open' on an open server). */
  readonly tenant: string
  /** Whether the token has `right` on some name at least. */
  hasRight(right: Right): boolean
  /**
   * The token itself, as its SHA-256 (undefined on an open server): what a
   * session is bound to, compared with sameToken (constant time).
   */
  readonly identity?: Buffer
}

export const OPEN: Access = { allows: () => true, coversPrefix: () => true, scopes: () => undefined, everyName: true, tenant: 'open', hasRight: () => true }

/** Whether `access` is the token `identity` stands for (undefined: a server without tokens, where anyone is). Constant time. */
export function sameToken(access: Access, identity: Buffer | undefined): boolean {
  if (identity === undefined) return true
  return access.identity !== undefined && access.identity.length === identity.length && timingSafeEqual(access.identity, identity)
}

/**
 * Bearer tokens from `--tokens FILE`: a JSON array of
 * `{ "token", "prefixes"?: [...], "rights"?: ["read" | "lock" | "admin"] }`.
 * admin implies lock, lock implies read. Tokens are hashed at load and
 * compared in constant time against every entry; a token never appears in an
 * error or log line.
 */
export class TokenAuth {
  private constructor(private grants: readonly Grant[], private readonly file: string) {}

  static load(file: string): TokenAuth {
    return new TokenAuth(readGrants(file), file)
  }

  /**
   * Reads the tokens file again (SIGHUP): revoked tokens stop working at
   * once, without a restart. A file that does not parse throws and leaves the
   * tokens in force as they were.
   */
  reload(): number {
    const grants = readGrants(this.file)
    this.grants = grants
    return grants.length
  }

  /** The access of an Authorization header; 401 when missing or unknown. */
  check(header: string | undefined): Access {
    const match = header ? /^Bearer\s+(\S+)\s*$/i.exec(header) : null
    if (!match) throw new HttpError('UNAUTHORIZED', 'this server needs "Authorization: Bearer <token>"')
    const presented = sha256(match[1]!)
    let found: Grant | undefined
    // Every entry is compared, so the time taken does not tell which one matched.
    for (const grant of this.grants) if (timingSafeEqual(grant.hash, presented) && !found) found = grant
    if (!found) throw new HttpError('UNAUTHORIZED', 'the bearer token is not valid on this server')
    const grant = found
    const prefixes = grant.prefixes
    const inScope = (name: string) => !prefixes || prefixes.some((p) => prefixCovers(p, name))
    return {
      allows: (right, name) => grant.rights.has(right) && inScope(name),
      coversPrefix: (prefix) => {
        if (!prefixes) return true
        const scopes = scopesOf(prefixes, prefix)
        return scopes.names.length > 0 || scopes.prefixes.length > 0
      },
      scopes: (prefix) => (prefixes ? scopesOf(prefixes, prefix) : undefined),
      everyName: !prefixes,
      tenant: grant.tenant,
      hasRight: (right) => grant.rights.has(right),
      identity: grant.hash,
      ...(grant.name !== undefined ? { name: grant.name } : {}),
    }
  }
}

function readGrants(file: string): Grant[] {
  let parsed: unknown
  try {
    parsed = JSON.parse(readFileSync(file, 'utf8'))
  } catch (cause) {
    throw invalidArgument(`the tokens file ${file} is not readable JSON (${(cause as Error).message.split('\n')[0]})`)
  }
  if (!Array.isArray(parsed) || parsed.length === 0) throw invalidArgument(`the tokens file ${file} must be a non-empty JSON array of { "token", "prefixes", "rights" }`)
  return parsed.map((entry, i) => parseEntry(entry, `${file}, entry ${i + 1} of ${parsed.length}`))
}

function parseEntry(entry: unknown, where: string): Grant {
  if (!entry || typeof entry !== 'object' || Array.isArray(entry)) throw invalidArgument(`${where} must be an object`)
  const { token, prefixes, rights, name, ...rest } = entry as Record<string, unknown>
  if (Object.keys(rest).length > 0) throw invalidArgument(`${where} has unknown fields ${Object.keys(rest).join(', ')}; known: token, name, prefixes, rights`)
  if (name !== undefined && (typeof name !== 'string' || name.length === 0 || name.length > 64)) throw invalidArgument(`${where}: "name" must be a string of 1 to 64 characters`)
  if (typeof token !== 'string' || token.length < 16 || /\s/.test(token)) throw invalidArgument(`${where}: "token" must be a string of at least 16 characters without spaces`)
  if (prefixes !== undefined && (!Array.isArray(prefixes) || prefixes.length === 0)) throw invalidArgument(`${where}: "prefixes" must be a non-empty array (omit it for every name)`)
  const granted = (rights ?? ['lock']) as unknown
  if (!Array.isArray(granted) || granted.length === 0 || !granted.every((r) => RIGHTS.includes(r as Right))) {
    throw invalidArgument(`${where}: "rights" must be a non-empty array of "read", "lock", "admin"`)
  }
  const set = new Set<Right>()
  for (const right of granted as Right[]) for (const implied of RIGHTS.slice(0, RIGHTS.indexOf(right) + 1)) set.add(implied)
  const hash = sha256(token)
  return {
    hash,
    tenant: hash.subarray(0, 8).toString('hex'),
    prefixes: prefixes === undefined ? undefined : (prefixes as unknown[]).map((p) => validatePrefix(p)),
    rights: set,
    name: name as string | undefined,
  }
}

function sha256(text: string): Buffer {
  return createHash('sha256').update(text).digest()
}

/** 403 unless `access` has `right` on `name`. */
export function demand(access: Access, right: Right, name: string): void {
  if (!access.allows(right, name)) {
    throw new HttpError('FORBIDDEN', `this token may not ${right === 'read' ? 'read' : right === 'lock' ? 'lock' : 'force-release'} "${name}" (outside its prefixes or rights)`)
  }
}
