import { invalidArgument } from './errors.js'

/** Longest lock name, in UTF-8 bytes; keeps store keys and URLs bounded. */
export const MAX_NAME_BYTES = 256

/**
 * Names under this prefix are baton's own (the lock server keeps its lease
 * secret as the value of a hold on one): the server refuses them from
 * clients, and no listing meant for people shows them unless asked by prefix.
 */
export const RESERVED_NAME_PREFIX = '.baton/'
export const isReservedName = (name: string): boolean => name.startsWith(RESERVED_NAME_PREFIX)

// Control characters break logs, HTTP paths and key layouts; braces would let a
// name pick another Redis Cluster hash slot than its own.
const FORBIDDEN = /[\u0000-\u001f\u007f{}]/

/** Checks a lock name; every public entry point calls this before a store sees it. */
export function validateName(name: unknown, what = 'lock name'): string {
  if (typeof name !== 'string') throw invalidArgument(`the ${what} must be a string, got ${typeof name}`)
  if (name.length === 0) throw invalidArgument(`the ${what} must not be empty`)
  if (Buffer.byteLength(name, 'utf8') > MAX_NAME_BYTES) {
    throw invalidArgument(`the ${what} must be at most ${MAX_NAME_BYTES} bytes, got ${Buffer.byteLength(name, 'utf8')}`)
  }
  if (FORBIDDEN.test(name)) {
    throw invalidArgument(`the ${what} ${JSON.stringify(name)} contains a control character or a brace, which are not allowed`)
  }
  return name
}

/** A prefix for list(): the empty string is allowed and means "all". */
export function validatePrefix(prefix: unknown): string {
  if (prefix === undefined || prefix === '') return ''
  return validateName(prefix, 'prefix')
}
