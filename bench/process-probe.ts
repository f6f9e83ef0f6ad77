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
