import { randomBytes } from 'node:crypto';
import { linkSync, readFileSync, renameSync, unlinkSync, writeFileSync } from 'node:fs';

/** The lock is held by a live process: names it so the user knows what to stop. */
export class LockHeldError extends Error {
  constructor(
    readonly file: string,
    readonly pid: number,
  ) {
    super(`${file} is held by the running process ${pid}`);
    this.name = 'LockHeldError';
  }
}

export interface PidLock {
  readonly file: string;
  /** Removes the lock file if it is still ours; safe to call more than once. */
  release(): void;
}

export interface Holder {
  pid: number;
  /** the holder's start time in clock ticks since boot (Linux), so a reused pid is not mistaken for it */
  startTime: string | undefined;
}

/** Lock files this process holds: a second claim from the same process is refused, not mistaken for stale. */
const held = new Set<string>();

function startTimeOf(pid: number): string | undefined {
  try {
    // Field 22 of /proc/<pid>/stat; the command name (field 2) may hold spaces, so count from its ')'.
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19];
  } catch {
    return undefined;
  }
}

function readHolder(file: string): Holder | undefined {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch {
    return undefined;
  }
  const [pid, startTime] = text.split('\n');
  return /^\d+$/.test(pid) ? { pid: Number(pid), startTime: startTime || undefined } : { pid: 0, startTime: undefined };
}

/** This process as a lock file names it: its pid and start time. */
export function thisProcess(): Holder {
  return { pid: process.pid, startTime: startTimeOf(process.pid) };
}

/** Whether the process a lock file (or a file written like one) names still runs: the same pid, started then. */
export function alive(holder: Holder): boolean {
  if (holder.pid <= 0) return false;
  if (holder.pid === process.pid) return true;
  try {
    process.kill(holder.pid, 0);
  } catch (err) {
    // EPERM: it exists but belongs to another user, so it is alive.
    if ((err as NodeJS.ErrnoException).code !== 'EPERM') return false;
  }
  const now = startTimeOf(holder.pid);
  return holder.startTime === undefined || now === undefined || now === holder.startTime;
}

/**
 * Takes `file` for this process, or throws LockHeldError naming the live
 * holder. A lock left by a dead process (SIGKILL, crash, reboot) is taken
 * over. The file holds the pid on its first line, so `cat` shows the owner.
 *
 * The content is written to a private file first and hard-linked into place,
 * which fails atomically when the lock exists: no reader ever sees an empty
 * lock. A stale lock is renamed aside before removal, so of two processes
 * taking over the same stale lock only one wins.
 */
export function acquirePidLock(file: string): PidLock {
  for (let tries = 0; tries < 10; tries++) {
    const mine = `${file}.${process.pid}.${randomBytes(4).toString('hex')}`;
    writeFileSync(mine, `${process.pid}\n${startTimeOf(process.pid) ?? ''}\n`);
    try {
      linkSync(mine, file);
      return ownLock(file);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
    } finally {
      unlinkSync(mine);
    }
    const holder = readHolder(file);
    if (holder === undefined) continue;
    if (holder.pid === process.pid ? held.has(file) : alive(holder)) throw new LockHeldError(file, holder.pid);
    const aside = `${file}.stale.${process.pid}.${randomBytes(4).toString('hex')}`;
    try {
      renameSync(file, aside);
    } catch {
      continue;
    }
    const moved = readHolder(aside);
    if (moved && moved.pid !== holder.pid && alive(moved)) {
      // Another process took the stale lock between our read and our rename: give it back.
      try {
        linkSync(aside, file);
      } catch {
        /* it has already been replaced */
      }
      unlinkSync(aside);
      throw new LockHeldError(file, moved.pid);
    }
    unlinkSync(aside);
  }
  throw new Error(`could not take the lock ${file}: it keeps changing hands`);
}

function ownLock(file: string): PidLock {
  held.add(file);
  const release = () => {
    if (!held.delete(file)) return;
    process.removeListener('exit', release);
    if (readHolder(file)?.pid === process.pid) {
      try {
        unlinkSync(file);
      } catch {
        /* already gone */
      }
    }
  };
  // process.exit() skips every async cleanup; a synchronous unlink still runs.
  process.on('exit', release);
  return { file, release };
}
