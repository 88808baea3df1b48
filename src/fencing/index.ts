/**
 * baton/fencing: the resource side of fencing tokens. See docs/fencing.md.
 */
export { advanceFence, MemoryFence, parseFencingToken, staleToken, type FenceCell, type FenceVerdict, type MemoryFenceOptions } from './fence.js'
export { PostgresFence, type PgQueryable, type PgPoolLike, type PostgresFenceOptions } from './postgres.js'
export { RedisFence, fenceKeyOf, type RedisScriptClient, type RedisFenceOptions, type FencedSetOptions } from './redis.js'
export { HttpFence, fencingHeaders, encodeLockHeader, decodeLockHeader, DEFAULT_MAX_FENCED_NAMES, FENCING_TOKEN_HEADER, FENCING_LOCK_HEADER, type HttpFenceOptions } from './http.js'
