/** Child processes of the documentation tests: examples run as a user runs them. */
import { spawn } from 'node:child_process'
import { ms } from '../harness/timing.js'

/** Runs a program to its end (by default a Node script); JSON lines of its stdout are parsed. */
export function runNode(script: string, args: string[], env: Record<string, string>, command = process.execPath) {
  return new Promise<{ code: number | null; lines: Record<string, any>[]; stderr: string }>((resolve, reject) => {
    const child = spawn(command, [script, ...args], { env: { ...process.env, ...env } })
    let stdout = ''
    let stderr = ''
    child.stdout.on('data', (d) => (stdout += d))
    child.stderr.on('data', (d) => (stderr += d))
    const timer = setTimeout(() => child.kill('SIGKILL'), ms(60_000))
    child.on('error', reject)
    child.on('close', (code) => {
      clearTimeout(timer)
      resolve({ code, stderr, lines: stdout.split('\n').filter((l) => l.startsWith('{')).map((l) => JSON.parse(l)) })
    })
  })
}

export async function waitUntil(check: () => Promise<boolean>): Promise<void> {
  const deadline = Date.now() + ms(20_000)
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error('timed out waiting for the example to join the line')
    await new Promise((r) => setTimeout(r, 25))
  }
}
