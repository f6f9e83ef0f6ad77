/*
 * npm run bench: throughput of POST /tasks, sequential (one request at a
 * time: the baseline, one transaction per request) against concurrent (the
 * publisher groups them into shared transactions), and end-to-end task
 * throughput with the runner. Figures are measured in this run on this
 * machine; only the ratios compare.
 */
import { loadConfig } from '../src/config';
import { startLocalBroker, type LocalBroker } from '../src/kafka/local-broker';
import { createLogger } from '../src/logger';
import { startService, type RunningService } from '../src/service';

const KEY = 'bench-key-0123456789abcdef';
const N = Number(process.argv[2] ?? 400);
const CONCURRENCY = Number(process.argv[3] ?? 50);

async function submit(url: string): Promise<string> {
  const res = await fetch(`${url}/tasks`, {
    method: 'POST',
    headers: { authorization: `Bearer ${KEY}`, 'content-type': 'application/json' },
    body: JSON.stringify({ type: 'countdown', input: { steps: 1, stepMs: 0 } }),
  });
  if (res.status !== 202) throw new Error(`POST /tasks answered ${res.status}: ${await res.text()}`);
  return ((await res.json()) as { taskId: string }).taskId;
}

async function pool<T>(count: number, concurrency: number, job: () => Promise<T>): Promise<T[]> {
  const out: T[] = [];
  let next = 0;
  await Promise.all(Array.from({ length: concurrency }, async () => {
    while (next < count) {
      next += 1;
      out.push(await job());
    }
  }));
  return out;
}

async function measure(service: RunningService, label: string, concurrency: number) {
  const before = service.kafka.publisherStats();
  const started = process.hrtime.bigint();
  const ids = await pool(N, concurrency, () => submit(service.url));
  const seconds = Number(process.hrtime.bigint() - started) / 1e9;
  const after = service.kafka.publisherStats();
  const transactions = after.transactions - before.transactions;
  const row = { label, requests: N, concurrency, seconds: +seconds.toFixed(2), perSecond: Math.round(N / seconds), transactions, requestsPerTransaction: +(N / transactions).toFixed(1) };
  console.log(JSON.stringify(row));
  return { ...row, ids };
}

async function allFinished(service: RunningService, ids: string[]): Promise<number> {
  const started = Date.now();
  for (const id of ids) {
    for (;;) {
      const res = await fetch(`${service.url}/tasks/${id}?fields=status`, { headers: { authorization: `Bearer ${KEY}` } });
      const { status } = (await res.json()) as { status: string };
      if (['succeeded', 'failed', 'cancelled'].includes(status)) break;
      await new Promise((r) => setTimeout(r, 20));
    }
  }
  return (Date.now() - started) / 1000;
}

async function main(): Promise<void> {
  const env = loadConfig();
  let broker: LocalBroker | undefined;
  if (!env.kafkaBrokers) broker = await startLocalBroker({ cacheDir: env.cacheDir, persistent: false });
  const brokers = env.kafkaBrokers ?? [(broker as LocalBroker).bootstrap];
  const config = (prefix: string) => loadConfig({ KAFKA_BROKERS: brokers.join(','), TOPIC_PREFIX: `bench.${Date.now()}.${prefix}.`, API_KEYS: `bench:${KEY}`, PORT: '0', HOST: '127.0.0.1', LOG_LEVEL: 'warn' });
  try {
    // Submissions alone: an api process with no runner beside it, so nothing else shares its transactions.
    const api = await startService({ config: config('api'), brokers, logger: createLogger('warn'), role: 'api' });
    await measure(api, 'warm-up', CONCURRENCY);
    const sequential = await measure(api, 'POST /tasks sequential (baseline: one transaction each)', 1);
    const concurrent = await measure(api, 'POST /tasks concurrent', CONCURRENCY);
    console.log(JSON.stringify({ ratio: 'concurrent / sequential requests per second', value: +(concurrent.perSecond / sequential.perSecond).toFixed(2) }));
    await api.stop();

    const all = await startService({ config: config('all'), brokers, logger: createLogger('warn'), role: 'all' });
    const e2eStart = Date.now();
    const batch = await measure(all, 'end-to-end: submit', CONCURRENCY);
    await allFinished(all, batch.ids);
    const e2e = (Date.now() - e2eStart) / 1000;
    console.log(JSON.stringify({ label: 'end-to-end: submitted and finished (countdown, 1 step; api and runner in one process)', tasks: N, seconds: +e2e.toFixed(2), tasksPerSecond: Math.round(N / e2e) }));
    await all.stop();
  } finally {
    await broker?.stop();
  }
  process.exit(0);
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
