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
}

/** What a request may do, after its bearer token was checked. */
export interface Access {
  allows(right: Right, name: string): boolean
  /** Whether some name under `prefix` could be allowed (for list and events). */
  coversPrefix(name: string): boolean
  /** Not limited to prefixes (metrics are about every name). */
  readonly everyName: boolean
}

export const OPEN: Access = { allows: () => true, coversPrefix: () => true, everyName: true }

/**
 * Bearer tokens from `--tokens FILE`: a JSON array of
 * `{ "token", "prefixes"?: [...], "rights"?: ["read" | "lock" | "admin"] }`.
 * admin implies lock, lock implies read. Tokens are hashed at load and
 * compared in constant time against every entry; a token never appears in an
 * error or log line.
 */
export class TokenAuth {
  private constructor(private readonly grants: readonly Grant[]) {}

  static load(file: string): TokenAuth {
    let parsed: unknown
    try {
      parsed = JSON.parse(readFileSync(file, 'utf8'))
    } catch (cause) {
      throw invalidArgument(`the tokens file ${file} is not readable JSON (${(cause as Error).message.split('\n')[0]})`)
    }
    if (!Array.isArray(parsed) || parsed.length === 0) throw invalidArgument(`the tokens file ${file} must be a non-empty JSON array of { "token", "prefixes", "rights" }`)
    return new TokenAuth(parsed.map((entry, i) => parseEntry(entry, `${file} entry ${i}`)))
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
    const inScope = (name: string) => !grant.prefixes || grant.prefixes.some((p) => name.startsWith(p))
    return {
      allows: (right, name) => grant.rights.has(right) && inScope(name),
      coversPrefix: (prefix) => !grant.prefixes || grant.prefixes.some((p) => p.startsWith(prefix) || prefix.startsWith(p)),
      everyName: !grant.prefixes,
    }
  }
}

function parseEntry(entry: unknown, where: string): Grant {
  if (!entry || typeof entry !== 'object' || Array.isArray(entry)) throw invalidArgument(`${where} must be an object`)
  const { token, prefixes, rights, ...rest } = entry as Record<string, unknown>
  if (Object.keys(rest).length > 0) throw invalidArgument(`${where} has unknown fields ${Object.keys(rest).join(', ')}; known: token, prefixes, rights`)
  if (typeof token !== 'string' || token.length < 16 || /\s/.test(token)) throw invalidArgument(`${where}: "token" must be a string of at least 16 characters without spaces`)
  if (prefixes !== undefined && (!Array.isArray(prefixes) || prefixes.length === 0)) throw invalidArgument(`${where}: "prefixes" must be a non-empty array (omit it for every name)`)
  const granted = (rights ?? ['lock']) as unknown
  if (!Array.isArray(granted) || granted.length === 0 || !granted.every((r) => RIGHTS.includes(r as Right))) {
    throw invalidArgument(`${where}: "rights" must be a non-empty array of "read", "lock", "admin"`)
  }
  const set = new Set<Right>()
  for (const right of granted as Right[]) for (const implied of RIGHTS.slice(0, RIGHTS.indexOf(right) + 1)) set.add(implied)
  return {
    hash: sha256(token),
    prefixes: prefixes === undefined ? undefined : (prefixes as unknown[]).map((p) => validatePrefix(p)),
    rights: set,
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
