/*
 * node dist/bench/ab-api.js [--post] [--c=N] <brokers> <pairs> <seconds> <label=dist> <label=dist> [...]: an
 * interleaved A/B of `GET /tasks/{id}?fields=status,type` (or with --post, `POST /tasks` of a countdown) at c=N (50
 * unless given) against api processes built from different commits (each a `dist` directory, e.g. of a `git
 * worktree`), all on one broker. Rounds are short and many (A, B, then B, A, ...): on a
 * shared 2-core machine the figures of one round swing by 10-20%, and only the median of many pairs' ratios is
 * steadier than what a change moves. CPU per request is the api's main thread's, read from /proc in nanoseconds.
 * Nothing is asserted; it prints one line per contender: medians and the pairs' ratios to the first contender.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { getter, poster, type LoadJob, type Target } from './load';

const KEY = 'bench-key-0123456789abcdef';
const AUTH = { authorization: `Bearer ${KEY}` };
const flags = process.argv.slice(2).filter((a) => a.startsWith('--'));
const POST = flags.includes('--post');
const CONCURRENCY = Number(flags.find((f) => f.startsWith('--c='))?.slice(4) ?? 50);
const TASK = { type: 'countdown', input: { steps: 1, stepMs: 0 } };

interface Contender {
  label: string;
  process: ChildProcess;
  target: Target;
}

interface Round {
  perSecond: number;
  p50Ms: number;
  p99Ms: number;
  cpuUsPerRequest: number;
}

/** the main thread's time on a CPU so far, in ns: the event loop's, syscalls included */
function mainThreadNs(pid: number): number {
  return Number(readFileSync(`/proc/${pid}/task/${pid}/schedstat`, 'utf8').split(' ')[0]);
}

const quantile = (values: number[], q: number) =>
  [...values].sort((a, b) => a - b)[Math.floor(q * (values.length - 1))] ?? NaN;

async function startApi(brokers: string, label: string, dist: string, port: number): Promise<Contender> {
  const child = spawn(process.execPath, [join(dist, 'src', 'main.js'), 'api'], {
    stdio: ['ignore', 'ignore', 'inherit'],
    env: {
      PATH: process.env.PATH ?? '',
      KAFKA_BROKERS: brokers,
      TOPIC_PREFIX: `ab.${Date.now()}.${label}.`,
      PORT: String(port),
      HOST: '127.0.0.1',
      API_KEYS: `bench:${KEY}`,
      LOG_LEVEL: 'warn',
    },
  });
  const base = `http://127.0.0.1:${port}`;
  while (
    !(await fetch(`${base}/health/ready`).then(
      (r) => r.status === 200,
      () => false,
    ))
  ) {
    if (child.exitCode !== null) throw new Error(`${label} exited with ${child.exitCode}`);
    await new Promise((r) => setTimeout(r, 100));
  }
  const res = await fetch(`${base}/tasks`, {
    method: 'POST',
    headers: { ...AUTH, 'content-type': 'application/json' },
    body: JSON.stringify(TASK),
  });
  const { taskId } = (await res.json()) as { taskId: string };
  const target = POST
    ? poster(`${base}/tasks`, TASK, AUTH, 202)
    : getter(`${base}/tasks/${taskId}?fields=status,type`, AUTH);
  return { label, process: child, target };
}

async function main(): Promise<void> {
  const [brokers, pairs, seconds, ...specs] = process.argv.slice(2).filter((a) => !a.startsWith('--'));
  const contenders: Contender[] = [];
  const client = spawn(process.execPath, [join(__dirname, 'load-client.js')], { stdio: ['pipe', 'pipe', 'inherit'] });
  const answers = createInterface({ input: client.stdout })[Symbol.asyncIterator]();
  const round = async (c: Contender, secs: number): Promise<Round> => {
    const pid = c.process.pid as number;
    const before = mainThreadNs(pid);
    const job: LoadJob = { target: c.target, seconds: secs, concurrency: CONCURRENCY };
    client.stdin.write(`${JSON.stringify(job)}\n`);
    const answer = JSON.parse((await answers.next()).value as string) as Omit<Round, 'cpuUsPerRequest'> & {
      requests: number;
    };
    const cpuUsPerRequest = (mainThreadNs(pid) - before) / 1000 / answer.requests;
    return { perSecond: answer.perSecond, p50Ms: answer.p50Ms, p99Ms: answer.p99Ms, cpuUsPerRequest };
  };
  try {
    for (const [i, spec] of specs.entries()) {
      const [label, dist] = spec.split('=');
      contenders.push(await startApi(brokers, label, dist, 18500 + i));
    }
    for (const c of contenders) await round(c, 3);
    const rounds = contenders.map(() => [] as Round[]);
    for (let r = 0; r < Number(pairs); r += 1) {
      const order = r % 2 === 0 ? [...contenders.keys()] : [...contenders.keys()].reverse();
      for (const i of order) rounds[i].push(await round(contenders[i], Number(seconds)));
    }
    for (const [i, c] of contenders.entries()) {
      const figure = (key: keyof Round) => {
        const ratios = rounds[i].map((f, r) => f[key] / rounds[0][r][key]);
        const q = (x: number) => quantile(ratios, x).toFixed(3);
        return `${key} median ${quantile(
          rounds[i].map((f) => f[key]),
          0.5,
        ).toFixed(2)}, ratio ${q(0.5)} (IQR ${q(0.25)}-${q(0.75)})`;
      };
      const figures = (['perSecond', 'p50Ms', 'p99Ms', 'cpuUsPerRequest'] as const).map(figure).join('; ');
      console.log(`${c.label} (${rounds[i].length} rounds): ${figures}`);
    }
  } finally {
    client.stdin.end();
    for (const c of contenders) c.process.kill('SIGTERM');
  }
}

main().catch((err: unknown) => {
  console.error(err);
  process.exitCode = 1;
});
