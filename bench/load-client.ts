/*
 * The load generator, run as a process of its own (see closedLoopApart in load.ts) so that its work does not share
 * the event loop of the servers it measures. It lives for the whole bench: each line on stdin is the JSON of a
 * LoadJob, and each job's answer is one JSON line on stdout (its figures, or `{"error": …}`). It exits when stdin ends.
 *
 * Why one process for every round: a fresh process ran each round's first requests interpreted and opened all its
 * connections inside the round. A 2,000-request round at c=200 lasted a fraction of a second, so that start-up was a
 * large part of it, the more so the faster the contender: the batched baseline measured about 6,000/s in such rounds
 * and 24,000/s from a client that had been running, as any real one has.
 */
import { createInterface } from 'node:readline';
import { Agent, request } from 'undici';
import type { LoadJob } from './load';

/** one pool per server and concurrency, kept across rounds, as a client that keeps its connections alive has */
const agents = new Map<string, Agent>();

function agentFor(job: LoadJob): Agent {
  const key = `${new URL(job.target.url).origin} ${job.concurrency}`;
  let agent = agents.get(key);
  if (!agent) {
    agent = new Agent({ connections: job.concurrency, keepAliveTimeout: 60000 });
    agents.set(key, agent);
  }
  return agent;
}

async function run(job: LoadJob): Promise<{ requests: number; perSecond: number; p50Ms: number; p99Ms: number }> {
  const agent = agentFor(job);
  const latencies: number[] = [];
  let next = 0;
  const started = performance.now();
  // A timed job sends no request after its time is up and counts the ones answered, those on the way included.
  const more =
    job.seconds === undefined
      ? () => next < (job.requests ?? 0)
      : () => performance.now() - started < (job.seconds as number) * 1000;
  await Promise.all(
    Array.from({ length: job.concurrency }, async () => {
      while (more()) {
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
  const requests = latencies.length;
  return { requests, perSecond: Math.round(requests / seconds), p50Ms: at(0.5), p99Ms: at(0.99) };
}

async function main(): Promise<void> {
  // One job at a time: a round never shares this process with another.
  for await (const line of createInterface({ input: process.stdin })) {
    if (line.trim() === '') continue;
    const answer = await run(JSON.parse(line) as LoadJob).catch((err: unknown) => ({
      error: err instanceof Error ? err.message : String(err),
    }));
    process.stdout.write(`${JSON.stringify(answer)}\n`);
  }
  await Promise.all([...agents.values()].map((a) => a.close()));
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
