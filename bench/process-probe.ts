/* What the benchmarks that run hookstream as its own process need: whether it is ready, and its memory. */
import { readFileSync } from 'node:fs';

export function rssMb(pid: number): number {
  const line =
    readFileSync(`/proc/${pid}/status`, 'utf8')
      .split('\n')
      .find((l) => l.startsWith('VmRSS:')) ?? '';
  return Math.round(Number(/(\d+)/.exec(line)?.[1] ?? 0) / 1024);
}

/** Polls /health/ready until it answers 200; fails if the process exits first. */
export async function ready(base: string, exited: () => number | null): Promise<void> {
  for (;;) {
    const code = exited();
    if (code !== null) throw new Error(`the service exited with ${code}`);
    const ok = await fetch(`${base}/health/ready`).then(
      (r) => r.status === 200,
      () => false,
    );
    if (ok) return;
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** The process's own memory account from its /metrics (prom-client's default metrics), in MB. */
export async function memoryMb(base: string): Promise<{ heapUsed: number; heapTotal: number; external: number }> {
  const text = await (await fetch(`${base}/metrics`)).text();
  const value = (name: string) => {
    const m = new RegExp(`^${name}(?:\\{[^}]*\\})? ([0-9.e+]+)$`, 'm').exec(text);
    return m ? Math.round(Number(m[1]) / 2 ** 20) : NaN;
  };
  return {
    heapUsed: value('nodejs_heap_size_used_bytes'),
    heapTotal: value('nodejs_heap_size_total_bytes'),
    external: value('nodejs_external_memory_bytes'),
  };
}

/** Linux's clock tick for /proc CPU times: USER_HZ, 100 on every kernel configuration Node supports. */
const TICK_MS = 10;

/**
 * CPU time (ms) a process and its live descendants have used so far, from /proc. The embedded broker's JVM is the
 * child of a watchdog shell, and a child's time reaches its parent's account only once it has exited.
 */
export function cpuMsOfTree(pid: number): number {
  let ms = 0;
  const pending = [pid];
  for (let next = pending.pop(); next !== undefined; next = pending.pop()) {
    try {
      // The fields after the command's closing parenthesis; utime and stime are the 12th and 13th of them.
      const fields = readFileSync(`/proc/${next}/stat`, 'utf8').split(') ')[1].split(' ');
      ms += (Number(fields[11]) + Number(fields[12])) * TICK_MS;
      const children = readFileSync(`/proc/${next}/task/${next}/children`, 'utf8').trim();
      if (children) pending.push(...children.split(' ').map(Number));
    } catch {
      // gone since it was listed: its time no longer counts anywhere we can read
    }
  }
  return ms;
}
