/* What the benchmarks that run hookstream as its own process need: a free port, and the process's RSS. */
import { readFileSync } from 'node:fs';
import { createServer } from 'node:net';

export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer().listen(0, '127.0.0.1', () => {
      const address = s.address();
      s.close(() => (typeof address === 'object' && address ? resolve(address.port) : reject(new Error('no port'))));
    });
  });
}

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
