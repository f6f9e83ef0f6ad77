/*
 * The load generator, run as a process of its own (see closedLoop in load.ts) so that its work does not share the
 * event loop of the servers it measures: `node load-client.js '<json of LoadJob>'` prints one JSON line.
 */
import { Agent, request } from 'undici';
import type { LoadJob } from './load';

async function main(): Promise<void> {
  const job = JSON.parse(process.argv[2] ?? '{}') as LoadJob;
  const agent = new Agent({ connections: job.concurrency, keepAliveTimeout: 10000 });
  const latencies: number[] = [];
  let next = 0;
  const started = performance.now();
  await Promise.all(
    Array.from({ length: job.concurrency }, async () => {
      while (next < job.requests) {
        next += 1;
        const t = performance.now();
        const res = await request(job.target.url, {
          method: job.target.method,
          headers: job.target.headers,
          body: job.target.body,
          dispatcher: agent,
        });
        const text = await res.body.text();
        if (res.statusCode !== job.target.expected) {
          throw new Error(`${job.target.url} answered ${res.statusCode}: ${text.slice(0, 300)}`);
        }
        latencies.push(performance.now() - t);
      }
    }),
  );
  const seconds = (performance.now() - started) / 1000;
  latencies.sort((a, b) => a - b);
  const at = (q: number) => +latencies[Math.min(latencies.length - 1, Math.floor(q * latencies.length))].toFixed(1);
  console.log(JSON.stringify({ perSecond: Math.round(job.requests / seconds), p50Ms: at(0.5), p99Ms: at(0.99) }));
  await agent.close();
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
