import { spawn, spawnSync } from 'node:child_process';
import { join } from 'node:path';

/** The build's entry points; `npm test` builds them first. */
export const DIST = join(__dirname, '../../dist/src');

export const alive = (pid: number) => spawnSync('kill', ['-0', String(pid)]).status === 0;

export async function gone(pid: number, timeoutMs: number): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (!alive(pid)) return true;
    await new Promise((r) => setTimeout(r, 200));
  }
  return !alive(pid);
}

/** A node process with only the environment given (and PATH), its stdout and stderr gathered in arrival order. */
export function run(args: string[], env: Record<string, string>) {
  const child = spawn(process.execPath, args, {
    env: { PATH: process.env.PATH ?? '', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  child.stdout.on('data', (d: Buffer) => {
    out += d.toString();
  });
  child.stderr.on('data', (d: Buffer) => {
    out += d.toString();
  });
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  /** the first `count` matches of `text` in the output so far, once there are that many */
  const waitFor = async (text: string | RegExp, timeoutMs: number, count = 1): Promise<RegExpMatchArray[]> => {
    const pattern = typeof text === 'string' ? new RegExp(text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')) : text;
    const global = new RegExp(pattern.source, `${pattern.flags.replace('g', '')}g`);
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const matches = [...out.matchAll(global)];
      if (matches.length >= count) return matches;
      if (child.exitCode !== null || Date.now() > deadline) {
        throw new Error(`never saw ${count} × ${String(text)}; output:\n${out}`);
      }
      await new Promise((r) => setTimeout(r, 100));
    }
  };
  /** the exit code, or 'running' if it has not exited within timeoutMs */
  const exitWithin = (timeoutMs: number) =>
    Promise.race([exited, new Promise<'running'>((r) => setTimeout(() => r('running'), timeoutMs).unref())]);
  return { child, exited, waitFor, exitWithin, output: () => out };
}

/** `npm start` on the embedded default in its own cache folder, as a user runs it (port chosen by the system). */
export function startOnEmbedded(cacheDir: string, env: Record<string, string> = {}) {
  return run([join(DIST, 'main.js')], {
    HOOKSTREAM_CACHE_DIR: cacheDir,
    PORT: '0',
    HOST: '127.0.0.1',
    LOG_LEVEL: 'warn',
    ...env,
  });
}

/** The pid of the Kafka JVM whose data is in `cacheDir` (0: none). */
export const brokerJvmOf = (cacheDir: string) =>
  Number(
    spawnSync('pgrep', ['-f', `${cacheDir}.*kafka.Kafka`], { encoding: 'utf8' })
      .stdout.trim()
      .split('\n')[0],
  );
