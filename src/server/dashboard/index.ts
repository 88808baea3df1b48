/**
 * The dashboard's files: a static page and its styles (next to this file,
 * copied into dist/ by the build), its script (app.js, bundled into dist/ by
 * the build from the modules in page/) and uPlot, served from node_modules.
 * No build step at run time; the server only maps paths to files.
 */
import { readFile } from 'node:fs/promises'
import { createRequire } from 'node:module'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import type { FastifyInstance } from 'fastify'

export interface DashboardAsset {
  readonly type: string
  readonly body: Buffer
  readonly headers: Readonly<Record<string, string>>
}

const HERE = dirname(fileURLToPath(import.meta.url))
const UPLOT = join(dirname(createRequire(import.meta.url).resolve('uplot/package.json')), 'dist')

/** URL path → file and content type. */
const FILES: Record<string, readonly [file: string, type: string]> = {
  '/': [join(HERE, 'index.html'), 'text/html; charset=utf-8'],
  '/dashboard/app.js': [join(HERE, 'app.js'), 'text/javascript; charset=utf-8'],
  '/dashboard/app.css': [join(HERE, 'app.css'), 'text/css; charset=utf-8'],
  '/dashboard/vendor/uplot.js': [join(UPLOT, 'uPlot.iife.min.js'), 'text/javascript; charset=utf-8'],
  '/dashboard/vendor/uplot.css': [join(UPLOT, 'uPlot.min.css'), 'text/css; charset=utf-8'],
}

/** The paths the dashboard answers, for the server's route table. */
export const DASHBOARD_PATHS: readonly string[] = Object.keys(FILES)

const HEADERS = {
  // Only our own scripts run on the page; it talks to this server only.
  'content-security-policy': "default-src 'self'; img-src 'self' data:; style-src 'self' 'unsafe-inline'; frame-ancestors 'none'",
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'no-referrer',
  'cache-control': 'no-cache',
} as const

const cache = new Map<string, Promise<DashboardAsset>>()

/** The file for `path` (one of DASHBOARD_PATHS), read once; undefined for any other path. */
export function dashboardAsset(path: string): Promise<DashboardAsset> | undefined {
  const entry = Object.hasOwn(FILES, path) ? FILES[path] : undefined
  if (!entry) return undefined
  let asset = cache.get(path)
  if (!asset) {
    const [file, type] = entry
    asset = readFile(file).then((body) => ({ type, body, headers: { ...HEADERS, 'content-type': type } }))
    asset.catch(() => cache.delete(path))
    cache.set(path, asset)
  }
  return asset
}

/**
 * Registers the dashboard's paths on the server. They are open (no bearer
 * token): the page holds no data; it asks for a token and sends it with
 * every API call it makes.
 */
export function dashboardRoutes(app: FastifyInstance): void {
  for (const path of DASHBOARD_PATHS) {
    app.get(path, { schema: { hide: true }, config: { open: true } }, async (_request, reply) => {
      const asset = await dashboardAsset(path)!
      return reply.headers(asset.headers).send(asset.body)
    })
  }
}
