/** The part of autocannon's API the server benchmark uses (it ships no types). */
declare module 'autocannon' {
  export interface Request {
    method?: string
    path?: string
    body?: string
    headers?: Record<string, string>
    setupRequest?: (request: Request, context: Record<string, unknown>) => Request
    onResponse?: (status: number, body: string, context: Record<string, unknown>) => void
  }
  export interface Options {
    url: string
    connections?: number
    duration?: number
    amount?: number
    pipelining?: number
    headers?: Record<string, string>
    requests?: Request[]
    method?: string
    body?: string
  }
  export interface Result {
    requests: { average: number; total: number }
    errors: number
    non2xx: number
    duration: number
  }
  function autocannon(options: Options): Promise<Result>
  export default autocannon
}
