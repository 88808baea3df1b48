/**
 * A lease on the wire: the id a request names it by (path, body or header)
 * and the body a grant or renewal answers with. Shared by every route that
 * grants or acts on a lease.
 */
import type { FastifyRequest } from 'fastify'
import type { HoldRef } from '../internal-api.js'
import { demand } from './auth.js'
import { accessOf, type ServerContext } from './context.js'
import { HttpError } from './http-errors.js'
import { ownerDigest, type LeaseIds, type LeaseRef } from './lease-id.js'

/**
 * `askedTtlMs`: the ttl asked for, the default of later extends; `leftMs`:
 * what is left of the grant, measured from `now` (epoch ms). The caller
 * reads the wall clock before it measures `leftMs`, so that a pause between
 * the two reads (a GC, the process descheduled) can only shorten the end the
 * answer names, never move it past the store's.
 */
export function grantBody(ids: LeaseIds, ref: HoldRef, askedTtlMs: number, leftMs: number, now: number) {
  return {
    leaseId: ids.encode(ref, askedTtlMs), name: ref.name, token: ref.token.toString(), expiresAt: now + leftMs, ttlMs: leftMs,
    owner: ownerDigest(ref.owner), mode: ref.mode,
  }
}

/**
 * The lease a request names: in the path, else in the body, else in the
 * Baton-Lease-Id header (proxies log paths). 404 for anything that is not an
 * id minted by a server of this store, edited ones included (lease-id.ts).
 */
export function leaseOf(ctx: ServerContext, request: FastifyRequest, leaseId: string | undefined): LeaseRef {
  const header = request.headers[LEASE_HEADER]
  const id = leaseId ?? (typeof header === 'string' ? header : undefined)
  if (id === undefined) throw new HttpError('INVALID_ARGUMENT', 'name the lease: in the path, as "leaseId" in the body, or in the Baton-Lease-Id header')
  const ref = ctx.leaseIds.decode(id)
  if (!ref) throw new HttpError('NOT_FOUND', 'this is not a lease id of a server of this store (unknown, edited, or from another store)')
  demand(accessOf(request), 'lock', ref.name)
  return ref
}

const LEASE_HEADER = 'baton-lease-id'

export const leaseGone = (name: string) =>
  new HttpError('LEASE_LOST', `the lease on "${name}" is gone (it expired, was released or was taken by force)`)
