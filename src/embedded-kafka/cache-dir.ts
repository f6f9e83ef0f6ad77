import { accessSync, constants, mkdirSync, statSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { ConfigError } from '../config';

/**
 * Creates `dir` one level at a time. Node's `mkdirSync(…, { recursive: true })` never returns on some paths (under
 * /proc it loops on ENOENT for ever, deaf to SIGTERM); one level at a time, the first level that cannot be made
 * throws.
 */
function makeDirectory(dir: string): void {
  const missing: string[] = [];
  for (let at = resolve(dir); ; at = dirname(at)) {
    try {
      statSync(at);
      break;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT' || dirname(at) === at) throw err;
      missing.unshift(at);
    }
  }
  for (const level of missing) {
    try {
      mkdirSync(level);
    } catch (err) {
      // Another process (a second role started with it) made it meanwhile.
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
    }
  }
}

/**
 * The embedded broker's cache folder (HOOKSTREAM_CACHE_DIR) made ready before anything is put in it: a folder this
 * process can write, or a ConfigError naming the variable. Otherwise a file, a read-only or impossible path failed
 * later, deep in the broker's start, with a stack trace and no word of the setting.
 */
export function prepareCacheDir(dir: string): void {
  try {
    makeDirectory(dir);
    if (!statSync(dir).isDirectory()) throw Object.assign(new Error('not a directory'), { code: 'ENOTDIR' });
    accessSync(dir, constants.W_OK | constants.X_OK);
  } catch (err) {
    const e = err as NodeJS.ErrnoException;
    const why = e.code ? `${e.code}${e.path && resolve(e.path) !== resolve(dir) ? ` at ${e.path}` : ''}` : e.message;
    throw new ConfigError([
      `HOOKSTREAM_CACHE_DIR=${JSON.stringify(dir)} must be a folder this process can create and write (${why})`,
    ]);
  }
}
