import { readFileSync, unwatchFile, watchFile } from 'node:fs'
import type { Server } from 'node:https'
import { createSecureContext, type SecureContextOptions } from 'node:tls'
import { invalidArgument } from '../core/errors.js'

/** The files of `baton serve --tls-cert --tls-key [--tls-ca]`. */
export interface TlsFiles {
  /** The server's certificate chain (PEM). */
  readonly cert: string
  /** Its private key (PEM). */
  readonly key: string
  /** When given: clients must present a certificate signed by this CA (PEM); others are refused in the handshake. */
  readonly ca?: string
}

/** What https.createServer and setSecureContext take, read from the files now. */
export type TlsSettings = SecureContextOptions & { requestCert: boolean; rejectUnauthorized: boolean }

/**
 * Reads the files and checks that they make a usable context (a key that
 * matches its certificate, PEM that parses), so a bad file is refused with
 * its name at start or at a reload, never at a client's handshake.
 */
export function readTls(files: TlsFiles): TlsSettings {
  const read = (path: string, flag: string) => {
    try {
      return readFileSync(path)
    } catch (cause) {
      throw invalidArgument(`${flag} ${path} can not be read (${(cause as Error).message})`, cause)
    }
  }
  const settings: TlsSettings = {
    cert: read(files.cert, '--tls-cert'),
    key: read(files.key, '--tls-key'),
    ...(files.ca !== undefined ? { ca: read(files.ca, '--tls-ca') } : {}),
    requestCert: files.ca !== undefined,
    rejectUnauthorized: files.ca !== undefined,
  }
  try {
    createSecureContext(settings)
  } catch (cause) {
    throw invalidArgument(`--tls-cert ${files.cert}, --tls-key ${files.key}${files.ca !== undefined ? `, --tls-ca ${files.ca}` : ''} do not make a TLS context: ${(cause as Error).message}`, cause)
  }
  return settings
}

/** How often the certificate files are checked for a change (a stat each). */
const WATCH_MS = 1000
/** Changes this close together are one rotation (a certificate and its key are seldom written at once). */
const SETTLE_MS = 300

/**
 * Rotation without a restart: reload() (SIGHUP) or a change to any of the
 * files gives new connections the new certificate; open connections keep the
 * one they shook hands with. The files are polled (fs.watchFile), not
 * watched by inode, so a file replaced by a rename (as certificate tools and
 * Kubernetes secrets do) is still followed. A set of files that does not
 * make a context (a certificate written before its key) keeps the previous
 * one in force.
 */
export class CertificateReloader {
  private settle: NodeJS.Timeout | undefined
  private readonly onChange = () => {
    clearTimeout(this.settle)
    this.settle = setTimeout(() => this.reloadQuietly('a certificate file changed'), SETTLE_MS)
    this.settle.unref()
  }

  constructor(
    private readonly files: TlsFiles,
    private readonly server: Server,
    private readonly log: (line: string) => void,
  ) {
    for (const file of this.paths()) watchFile(file, { interval: WATCH_MS, persistent: false }, this.onChange)
  }

  /** Reads the files again into the server's context; throws (keeping the old one) when they do not make one. */
  reload(): void {
    this.server.setSecureContext(readTls(this.files))
  }

  close(): void {
    clearTimeout(this.settle)
    for (const file of this.paths()) unwatchFile(file, this.onChange)
  }

  private reloadQuietly(why: string): void {
    try {
      this.reload()
      this.log(`baton serve: ${why}: reloaded the TLS certificate from ${this.files.cert}`)
    } catch (error) {
      this.log(`baton serve: ${why}: kept the previous TLS certificate: ${(error as Error).message.replace(/^baton: /, '')}`)
    }
  }

  private paths(): string[] {
    return [this.files.cert, this.files.key, ...(this.files.ca !== undefined ? [this.files.ca] : [])]
  }
}
