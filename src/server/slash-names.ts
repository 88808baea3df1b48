import type { IncomingMessage } from 'node:http'

const LOCKS = '/v1/locks/'
const ACQUIRE = '/acquire'

/**
 * Lock names with slashes, written as they are (`/v1/locks/orders/42/acquire`,
 * `GET /v1/locks/orders/42`), as Consul's KV paths take them: rewritten to
 * the one-segment form (`orders%2F42`) before routing, since proxies reject
 * or decode encoded slashes. A POST ending in /acquire acquires the name
 * before it; any other method's path is the name.
 */
export function slashNames(request: IncomingMessage): string {
  const url = request.url ?? '/'
  if (!url.startsWith(LOCKS)) return url
  const queryAt = url.indexOf('?')
  const path = queryAt < 0 ? url : url.slice(0, queryAt)
  let name = path.slice(LOCKS.length)
  if (!name.includes('/')) return url
  let suffix = ''
  if (request.method === 'POST' && name.endsWith(ACQUIRE)) {
    name = name.slice(0, -ACQUIRE.length)
    suffix = ACQUIRE
    if (!name.includes('/')) return url
  }
  return `${LOCKS}${name.split('/').join('%2F')}${suffix}${queryAt < 0 ? '' : url.slice(queryAt)}`
}
