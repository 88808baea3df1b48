// Calls to the server's /v1 API with the reading token, and the lock view it
// answers turned into the page's own record. Separate: every view that loads
// or changes something goes through it.
import { state } from './state.js'

export class ApiError extends Error {
  constructor(status, message) {
    super(message)
    this.status = status
  }
}

export async function api(path, init = {}, token = state.token) {
  const headers = { accept: 'application/json', ...(init.headers ?? {}) }
  if (token) headers.authorization = `Bearer ${token}`
  const res = await fetch(path, { ...init, headers, cache: 'no-store' })
  if (!res.ok) {
    let message = `${res.status} ${res.statusText}`
    try {
      const body = await res.json()
      if (body?.error?.message) message = body.error.message
    } catch { /* not JSON */ }
    throw new ApiError(res.status, message)
  }
  return res.status === 204 ? null : res.json()
}

export const lockPath = (name) => `/v1/locks/${encodeURIComponent(name)}`

export function fromView(view) {
  return {
    name: view.name, kind: view.kind, fair: view.fair, permits: view.permits,
    holders: view.holders.map((h) => ({ owner: h.owner, token: h.token, mode: h.mode, weight: h.weight, expiresAt: h.expiresAt, since: h.since, description: h.description })),
    waiters: view.waiters.map((w) => ({ owner: w.owner, mode: w.mode, weight: w.weight, since: w.since, description: w.description })),
  }
}
