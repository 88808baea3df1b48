import mysql from 'mysql2/promise'
import { nextValue } from '../util.js'
import { pollingContender } from './polling.js'
import type { Contender, PeerDef, Release } from './types.js'

const TABLE = 'bench_update_lock'

/**
 * The MySQL baseline, as pg-update is PostgreSQL's: a lock as one row,
 * taken by one single-row UPDATE (affected rows say whether it was taken)
 * and released by another, on a mysql2 pool of baton's default size (10).
 * No fencing, no line, no wake-ups: two round trips and two commits a pair.
 */
export const mysqlUpdate: PeerDef = {
  id: 'mysql-update',
  store: 'mysql',
  label: () => 'bare UPDATE ×2',
  async create({ url, ttlMs, waitMs }): Promise<Contender> {
    const pool = mysql.createPool({ uri: url.replace(/^mariadb:/, 'mysql:'), connectionLimit: 10 })
    await pool.query(`CREATE TABLE IF NOT EXISTS ${TABLE} (name VARBINARY(256) PRIMARY KEY, owner VARBINARY(64) NULL, expires_at DATETIME(6) NULL) ENGINE=InnoDB`)
    const known = new Set<string>()
    const attempt = async (key: string): Promise<Release | null> => {
      if (!known.has(key)) {
        await pool.query(`INSERT IGNORE INTO ${TABLE} (name) VALUES (?)`, [key])
        known.add(key)
      }
      const owner = nextValue()
      const [taken] = (await pool.query(
        `UPDATE ${TABLE} SET owner = ?, expires_at = NOW(6) + INTERVAL ? MICROSECOND WHERE name = ? AND (owner IS NULL OR expires_at <= NOW(6))`,
        [owner, ttlMs * 1000, key],
      )) as unknown as [{ affectedRows: number }]
      if (taken.affectedRows === 0) return null
      return async () => {
        await pool.query(`UPDATE ${TABLE} SET owner = NULL WHERE name = ? AND owner = ?`, [key, owner])
      }
    }
    return pollingContender(mysqlUpdate.label('default'), waitMs, attempt, () => pool.end())
  },
}
