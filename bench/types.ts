import type { RedisServer } from '../test/harness/servers.js'

/** What every scenario gets from the entry point. */
export interface BenchContext {
  /** The redis-server started for this benchmark (never the system one). */
  readonly redis: RedisServer
  readonly redisUrl: string
  /**
   * URL of a private PostgreSQL cluster (with pg_stat_statements), started on
   * first call, so runs of Redis scenarios only never start one.
   */
  postgresUrl(): Promise<string>
  /** URL of a private MariaDB server (commits flushed to disk), started on first call. */
  mysqlUrl(): Promise<string>
  /** BENCH_QUICK=1: a short smoke run with fewer, shorter measurements. */
  readonly quick: boolean
  /** Progress line on stderr (the report goes to stdout). */
  log(message: string): void
  /** `full` normally, `quick` under BENCH_QUICK=1. */
  pick<T>(full: T, quick: T): T
}

/** One line of the final summary table. */
export interface SummaryRow {
  figure: string
  baton: string
  /** The baseline or peer the figure compares with, and its value. */
  other: string
  ratio: string
  target: string
  met: boolean | undefined
}

export interface ScenarioResult {
  /** A markdown section: heading, table, notes. */
  markdown: string
  summary: SummaryRow[]
}

/**
 * One benchmark figure. To add one (fair mutex, rwlock readers, semaphore…),
 * drop a file in bench/scenarios/ exporting a Scenario and list it in
 * bench/scenarios/index.ts.
 */
export interface Scenario {
  /** Short id for BENCH_ONLY=id1,id2. */
  readonly id: string
  readonly title: string
  /** Longest run allowed, full and quick (default 300 s and 120 s). */
  readonly timeoutMs?: { readonly full: number; readonly quick: number }
  run(ctx: BenchContext): Promise<ScenarioResult>
}
