import pg from 'pg'
import { nextValue } from '../util.js'
import { pollingContender } from './polling.js'
import type { Contender, PeerDef, Release } from './types.js'

const TABLE = 'bench_update_lock'

/**
 * The PostgreSQL baseline: a lock as one row, taken by one single-row
 * `UPDATE … RETURNING` and released by another, on a pg Pool of baton's
 * default size (10). No fencing, no line, no wake-ups: the floor of what a
 * row lock costs, two round trips and two commits per pair.
 */
export const pgUpdate: PeerDef = {
  id: 'pg-update',
  store: 'postgres',
  label: () => 'bare UPDATE … RETURNING ×2',
  async create({ url, ttlMs, waitMs }): Promise<Contender> {
    const pool = new pg.Pool({ connectionString: url, max: 10 })
    pool.on('error', () => {})
    await pool.query(`CREATE TABLE IF NOT EXISTS ${TABLE} (name text PRIMARY KEY, owner text, expires_at timestamptz)`)
    const known = new Set<string>()
    const take = {
      name: 'bench_update_take',
      text: `UPDATE ${TABLE} SET owner = $2, expires_at = clock_timestamp() + $3::integer * interval '1 ms'
              WHERE name = $1 AND (owner IS NULL OR expires_at <= clock_timestamp()) RETURNING expires_at`,
    }
    const give = { name: 'bench_update_give', text: `UPDATE ${TABLE} SET owner = NULL WHERE name = $1 AND owner = $2 RETURNING name` }
    const attempt = async (key: string): Promise<Release | null> => {
      if (!known.has(key)) {
        await pool.query(`INSERT INTO ${TABLE} (name) VALUES ($1) ON CONFLICT DO NOTHING`, [key])
        known.add(key)
      }
      const owner = nextValue()
      const taken = await pool.query({ ...take, values: [key, owner, ttlMs] })
      if (taken.rowCount === 0) return null
      return async () => {
        await pool.query({ ...give, values: [key, owner] })
      }
    }
    return pollingContender(pgUpdate.label('default'), waitMs, attempt, () => pool.end())
  },
}
