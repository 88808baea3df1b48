/**
 * The routes that show or clear a name whatever holds it: inspect, list
 * (paged within the token's scopes) and force release; and the public view
 * of a lock they answer with.
 */
import type { FastifyInstance } from 'fastify'
import type { Baton, LockView } from '../index.js'
import { compareNames, validatePrefix } from '../internal-api.js'
import type { NameParams } from './acquire-request.js'
import { demand } from './auth.js'
import { accessOf, type ServerContext } from './context.js'
import { HttpError } from './http-errors.js'
import { isReserved, requestName } from './lease-secret.js'
import { schemas } from './schemas.js'

/** Inspect, list and force release of docs/http-api.md. */
export function lockViewRoutes(app: FastifyInstance, ctx: ServerContext): void {
  const { baton } = ctx

  app.get<NameParams>('/v1/locks/:name', { schema: schemas.inspect }, async (request) => {
    const name = requestName(request.params.name)
    demand(accessOf(request), 'read', name)
    const view = await baton.inspect(name)
    if (!view) throw new HttpError('NOT_FOUND', `"${name}" is not in use (nobody holds or waits for it)`)
    return publicView(view)
  })

  app.get<{ Querystring: { prefix?: string; limit?: string; cursor?: string } }>('/v1/locks', { schema: schemas.list }, async (request) => {
    const access = accessOf(request)
    const prefix = validatePrefix(request.query.prefix ?? '')
    if (!access.coversPrefix(prefix)) throw new HttpError('FORBIDDEN', `this token may not read names under "${prefix}"`)
    const limit = Number(request.query.limit ?? 100)
    if (!(limit >= 1 && limit <= 1000)) throw new HttpError('INVALID_ARGUMENT', `"limit" must be from 1 to 1000, got ${request.query.limit}`)
    const after = request.query.cursor === undefined ? undefined : decodeCursor(request.query.cursor)
    // Paged within the token's scopes: every name fetched is one it may see,
    // so the cursor (the last name of the page) never tells of any other.
    const scopes = access.scopes(prefix)
    const queries = scopes ? scopes.prefixes : [prefix]
    const shown = (view: LockView): boolean => access.allows('read', view.name) && !isReserved(view.name)
    // One more than the page, to know whether another page follows; the store reads only about this page.
    const pages = await Promise.all(queries.map((q) => shownPage(baton, q, after, limit + 1, shown)))
    const exact = scopes ? scopes.names.filter((name) => after === undefined || compareNames(name, after) > 0) : []
    const named = await Promise.all(exact.map((name) => baton.inspect(name)))
    const byName = new Map<string, LockView>()
    for (const view of [...pages.flat(), ...named]) if (view && shown(view)) byName.set(view.name, view)
    const fetched = [...byName.values()].sort((a, b) => compareNames(a.name, b.name))
    const page = fetched.slice(0, limit)
    return {
      locks: page.map(publicView),
      ...(fetched.length > limit ? { nextCursor: Buffer.from(page[page.length - 1]!.name).toString('base64url') } : {}),
    }
  })

  app.delete<NameParams>('/v1/locks/:name', { schema: schemas.forceRelease }, async (request) => {
    const name = requestName(request.params.name)
    const access = accessOf(request)
    demand(access, 'admin', name)
    return { released: await ctx.desk.forceRelease(name, access.name ?? (request.access ? 'an unnamed admin token' : 'open server')) }
  })
}

/**
 * Up to `wanted` locks under `prefix` after `after` that `shown` keeps, in
 * name order. A store page can hold names the answer leaves out (the
 * server's own ".baton/lease-secret" hold sorts before most names), so the
 * store is read on past them: a name left out never takes a place on the
 * page, which would hide that another page follows.
 */
async function shownPage(baton: Baton, prefix: string, after: string | undefined, wanted: number, shown: (view: LockView) => boolean): Promise<LockView[]> {
  const kept: LockView[] = []
  for (let from = after; ;) {
    const asked = wanted - kept.length
    const views = await baton.list({ prefix, ...(from ? { after: from } : {}), limit: asked })
    for (const view of views) if (shown(view)) kept.push(view)
    if (views.length < asked || kept.length >= wanted) return kept
    from = views[views.length - 1]!.name
  }
}

function decodeCursor(cursor: string): string {
  if (!/^[A-Za-z0-9_-]*$/.test(cursor)) throw new HttpError('INVALID_ARGUMENT', '"cursor" must be the nextCursor of a previous page')
  return Buffer.from(cursor, 'base64url').toString('utf8')
}

/** A lock as the API shows it: owner digests, tokens as decimal strings. */
export function publicView(view: LockView) {
  return {
    name: view.name, kind: view.kind, fair: view.fair, permits: view.permits,
    // Owners come already shown as publicOwner (the digest of a secret owner), as every path shows them.
    holders: view.holders.map((h) => ({
      owner: h.owner, token: h.token.toString(), mode: h.mode, ...(h.weight !== undefined ? { weight: h.weight } : {}), expiresAt: h.expiresAt, ...who(h), ...(h.value !== undefined ? { value: h.value } : {}),
    })),
    waiters: view.waiters.map((w) => ({ owner: w.owner, mode: w.mode, ...(w.weight !== undefined ? { weight: w.weight } : {}), ...who(w) })),
    lastToken: view.lastToken.toString(),
  }
}

/** A hold's or waiter's description and since, when the store keeps them (issue 17: who holds it). */
function who(entry: { description?: string; since?: number }): { description?: string; since?: number } {
  return {
    ...(entry.description !== undefined ? { description: entry.description } : {}),
    ...(entry.since !== undefined ? { since: entry.since } : {}),
  }
}
