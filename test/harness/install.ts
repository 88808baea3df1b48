import { execFile } from 'node:child_process';
import { access, constants } from 'node:fs/promises';
import { delimiter, join } from 'node:path';
import { promisify } from 'node:util';

const execFileAsync = promisify(execFile);

async function isExecutable(path: string): Promise<boolean> {
  try {
    await access(path, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

/** Resolve `command` against PATH like a shell would; undefined when absent. */
export async function findOnPath(command: string): Promise<string | undefined> {
  if (command.includes('/')) return (await isExecutable(command)) ? command : undefined;
  for (const dir of (process.env.PATH ?? '').split(delimiter)) {
    if (dir === '') continue;
    const candidate = join(dir, command);
    if (await isExecutable(candidate)) return candidate;
  }
  return undefined;
}

// apt holds a global lock, so installs are serialised through one chain, and
// the (slow) index refresh happens at most once per process. Test files run in
// parallel processes, so apt-get also waits for a lock another process holds.
let aptChain: Promise<unknown> = Promise.resolve();
let aptUpdated: Promise<void> | undefined;

function serialised<T>(fn: () => Promise<T>): Promise<T> {
  const run = aptChain.then(fn, fn);
  aptChain = run.catch(() => undefined);
  return run;
}

function describeFailure(err: unknown): string {
  if (err && typeof err === 'object') {
    const e = err as { message?: string; stderr?: string | Buffer };
    const message = (e.message ?? String(err)).trim();
    const stderr = e.stderr?.toString().trim().slice(-2000);
    // execFile's message usually already embeds stderr.
    return stderr && !message.includes(stderr) ? `${message}\n${stderr}` : message;
  }
  return String(err);
}

const APT_LOCK_WAIT = ['-o', 'DPkg::Lock::Timeout=600'];

// Test files run as parallel processes, and `apt-get update` does not wait for
// the lists lock that another process's update holds (it fails at once), so
// every apt-get of the tests runs under one file lock, taken with flock(1).
const APT_FILE_LOCK = '/tmp/baton-tests-apt.lock';

function aptGet(args: string[]) {
  return execFileAsync('flock', ['-w', '1200', APT_FILE_LOCK, 'apt-get', ...APT_LOCK_WAIT, ...args], APT_OPTIONS);
}

const APT_OPTIONS = {
  env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive' },
  maxBuffer: 64 * 1024 * 1024,
};

function aptUpdate(): Promise<void> {
  aptUpdated ??= aptGet(['update']).then(
    () => undefined,
    (err: unknown) => {
      aptUpdated = undefined; // allow a later retry
      throw new Error(`apt-get update failed: ${describeFailure(err)}`);
    },
  );
  return aptUpdated;
}

/**
 * Make sure `command` is on PATH. When it is missing and we are root, install
 * `debianPackage` with apt-get; otherwise (or if that did not help) throw an
 * error naming the package to install.
 */
export async function ensureCommand(command: string, debianPackage: string): Promise<void> {
  if (await findOnPath(command)) return;
  const isRoot = process.getuid?.() === 0;
  if (isRoot) {
    await serialised(async () => {
      if (await findOnPath(command)) return; // installed by a concurrent call
      await aptUpdate();
      try {
        await aptGet(['install', '-y', debianPackage]);
      } catch (err) {
        throw new Error(`apt-get install -y ${debianPackage} failed (needed for \`${command}\`): ${describeFailure(err)}`);
      }
    });
    if (await findOnPath(command)) return;
  }
  throw new Error(
    `\`${command}\` is not on PATH; install the Debian package "${debianPackage}" ` +
      `(e.g. \`sudo apt-get install -y ${debianPackage}\`)` +
      (isRoot ? ' — automatic installation did not provide it' : ''),
  );
}

/**
 * Make sure one of `paths` exists (a jar rather than a command, e.g. for
 * ZooKeeper): when none does and we are root, install `debianPackage`.
 * Returns the first path found.
 */
export async function ensureFile(paths: readonly string[], debianPackage: string): Promise<string> {
  const find = async (): Promise<string | undefined> => {
    for (const path of paths) {
      try {
        await access(path, constants.R_OK);
        return path;
      } catch {
        // next
      }
    }
    return undefined;
  };
  const found = await find();
  if (found) return found;
  if (process.getuid?.() === 0) {
    await serialised(async () => {
      if (await find()) return;
      await aptUpdate();
      try {
        await aptGet(['install', '-y', debianPackage]);
      } catch (err) {
        throw new Error(`apt-get install -y ${debianPackage} failed (needed for ${paths.join(' or ')}): ${describeFailure(err)}`);
      }
    });
    const installed = await find();
    if (installed) return installed;
  }
  throw new Error(`none of ${paths.join(', ')} exists; install the Debian package "${debianPackage}"`);
}
