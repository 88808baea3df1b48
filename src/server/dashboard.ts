/**
 * What `/` serves until the dashboard lands (issue 9): a static page naming
 * the API, so the route and its content type are already in place.
 */
export const DASHBOARD_HTML = `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>baton</title>
<style>body{font:15px/1.5 system-ui,sans-serif;max-width:46rem;margin:3rem auto;padding:0 1rem}code{background:#f3f3f3;padding:0 .25rem}</style>
</head><body>
<h1>baton lock server</h1>
<p>The live dashboard is not built yet. The API is up:</p>
<ul>
<li><a href="/v1/locks">/v1/locks</a>: locks in use</li>
<li><a href="/openapi.json">/openapi.json</a>: the API as OpenAPI</li>
<li><a href="/metrics">/metrics</a>, <a href="/healthz">/healthz</a>, <a href="/readyz">/readyz</a></li>
</ul>
<p>Try: <code>curl -X POST -H 'content-type: application/json' -d '{"ttl":"30s"}' http://HOST/v1/locks/demo/acquire</code></p>
</body></html>
`
