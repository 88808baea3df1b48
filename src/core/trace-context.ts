/**
 * How a trace crosses to another process: baton/otel's instrument() sets
 * `inject`, which adds the active trace context (W3C `traceparent`, through
 * the program's OpenTelemetry propagator) to an outgoing request's headers.
 * Stores that speak HTTP (the http:// store) call it for every request; unset,
 * nothing is added and nothing is loaded.
 */
export const traceContext: { inject: ((headers: Record<string, string>) => void) | undefined } = { inject: undefined }
