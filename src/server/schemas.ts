/**
 * Every route family's schemas, in one place for the server: the families
 * are imported here in a fixed order, so the named components (Grant, Lock,
 * Session…) are registered, and /openapi.json lists them, in that order.
 */
import { electionSchemas } from './election-schemas.js'
import { lockSchemas } from './lock-schemas.js'
import { multiSchemas } from './multi-schemas.js'
import { opsSchemas } from './ops-schemas.js'
import { sessionSchemas } from './session-schemas.js'

export { coerceIntegerQuery, componentSchemas, integerQueryFields } from './schema-parts.js'
/** The lock, lease and operations routes, by operation. */
export const schemas = { ...lockSchemas, ...opsSchemas }
export { electionSchemas, multiSchemas, sessionSchemas }
