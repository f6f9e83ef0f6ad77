import { spawn, type ChildProcessByStdio } from 'node:child_process';
import { createInterface } from 'node:readline';
import { join } from 'node:path';
import type { Socket } from 'node:net';
import type { Readable, Writable } from 'node:stream';
import { cpuMsOfTree } from './process-probe';
/** A closed-loop HTTP load: `concurrency` clients, each sending its next request when the last is answered. */
export interface LoadFigure {
  label: string;
  requests: number;
  concurrency: number;
  perSecond: number;
  p50Ms: number;
  p99Ms: number;
  /**
   * CPU time of this process (the servers it runs, not the load client) per request during the round: steadier than
   * the rate on a shared machine, where the rate is whatever share of the cores the process got.
   */
  cpuMsPerRequest?: number;
  /** the same for the embedded broker's JVM (see measureBrokerCpu) and for the load client's process */
  brokerCpuMsPerRequest?: number;
  clientCpuMsPerRequest?: number;
}

export async function closedLoop(
  label: string,
  requests: number,
  concurrency: number,
  send: () => Promise<void>,
): Promise<LoadFigure> {
  const latencies: number[] = [];
  let next = 0;
  const started = performance.now();
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < requests) {
        next += 1;
        const t = performance.now();
        await send();
        latencies.push(performance.now() - t);
      }
    }),
  );
  const seconds = (performance.now() - started) / 1000;
  latencies.sort((a, b) => a - b);
  const at = (q: number) => +latencies[Math.min(latencies.length - 1, Math.floor(q * latencies.length))].toFixed(1);
  return { label, requests, concurrency, perSecond: Math.round(requests / seconds), p50Ms: at(0.5), p99Ms: at(0.99) };
}

/** One HTTP request a load repeats, and the status it must answer. */
export interface Target {
  url: string;
  method: 'GET' | 'POST';
  headers: Record<string, string>;
  body?: string;
  expected: number;
}

/** `requests` in all, or as many as `seconds` allow */
export interface LoadJob {
  target: Target;
  requests?: number;
  seconds?: number;
  concurrency: number;
}

type ClientAnswer = (Pick<LoadFigure, 'requests' | 'perSecond' | 'p50Ms' | 'p99Ms'> | { error: string }) & {
  /** this process's CPU time while the client ran the job, in microseconds */
  cpuMicros?: number;
  /** the broker's and the client's CPU time meanwhile, in ms (10 ms ticks), the broker's when it is known */
  brokerCpuMs?: number;
  clientCpuMs?: number;
};

/** The embedded broker's watchdog (the JVM is its child), whose CPU each round reports; unset for a broker elsewhere */
let brokerPid: number | undefined;

export function measureBrokerCpu(pid: number | undefined): void {
  brokerPid = pid;
}

/** CPU so far of the processes a round accounts for, read when a job is sent and again when it is answered */
interface CpuMark {
  own: NodeJS.CpuUsage;
  brokerMs?: number;
  clientMs: number;
}

function spentSince(before: CpuMark, after: CpuMark): Pick<ClientAnswer, 'cpuMicros' | 'brokerCpuMs' | 'clientCpuMs'> {
  const own = after.own.user + after.own.system - (before.own.user + before.own.system);
  const broker =
    after.brokerMs !== undefined && before.brokerMs !== undefined ? after.brokerMs - before.brokerMs : undefined;
  return { cpuMicros: own, brokerCpuMs: broker, clientCpuMs: after.clientMs - before.clientMs };
}

/**
 * The load client process (bench/load-client.ts), started at the first job and kept for the rest of the bench; jobs
 * go to it one at a time. It ends when this process does (its stdin closes).
 */
class LoadClient {
  private readonly child: ChildProcessByStdio<Writable, Readable, null>;
  /** the job on its way; the queue lets one at a time through */
  private waiting: { resolve(answer: ClientAnswer): void; before: CpuMark } | undefined;
  private queue: Promise<unknown> = Promise.resolve();
  private exited: Error | undefined;

  constructor() {
    this.child = spawn(process.execPath, [join(__dirname, 'load-client.js')], { stdio: ['pipe', 'pipe', 'inherit'] });
    createInterface({ input: this.child.stdout }).on('line', (line) => {
      const before = this.waiting?.before;
      this.answer({ ...(JSON.parse(line) as ClientAnswer), ...(before && spentSince(before, this.cpuMark())) });
    });
    this.child.once('exit', (code) => {
      this.exited = new Error(`the load client exited with ${code}`);
      this.answer({ error: this.exited.message });
    });
    this.keepsAlive(false);
  }

  run(job: LoadJob): Promise<ClientAnswer> {
    const answer = this.queue.then(
      () =>
        new Promise<ClientAnswer>((resolve) => {
          if (this.exited) return resolve({ error: this.exited.message });
          this.keepsAlive(true);
          this.waiting = { resolve, before: this.cpuMark() };
          this.child.stdin.write(`${JSON.stringify(job)}\n`);
        }),
    );
    this.queue = answer;
    return answer;
  }

  private cpuMark(): CpuMark {
    return {
      own: process.cpuUsage(),
      brokerMs: brokerPid === undefined ? undefined : cpuMsOfTree(brokerPid),
      clientMs: this.child.pid === undefined ? 0 : cpuMsOfTree(this.child.pid),
    };
  }

  private answer(answer: ClientAnswer): void {
    const waiting = this.waiting;
    this.waiting = undefined;
    this.keepsAlive(false);
    waiting?.resolve(answer);
  }

  /** Only while a job runs: between jobs the bench exits with the client still waiting for one. */
  private keepsAlive(yes: boolean): void {
    for (const handle of [this.child, this.child.stdin, this.child.stdout] as unknown as Socket[]) {
      if (yes) handle.ref();
      else handle.unref();
    }
  }
}

let client: LoadClient | undefined;

/**
 * The same closed loop as closedLoop, run by bench/load-client.ts in a process of its own: on a 2-core machine the
 * client then takes the other core instead of the measured server's event loop. That process serves every round of
 * the bench, so a round measures the server, not the client's start-up (see load-client.ts).
 */
export function closedLoopApart(
  label: string,
  requests: number,
  concurrency: number,
  target: Target,
): Promise<LoadFigure> {
  return loadApart(label, { target, requests, concurrency });
}

/** closedLoopApart for `seconds` instead of a number of requests: the figure says how many were answered. */
export function timedLoopApart(
  label: string,
  seconds: number,
  concurrency: number,
  target: Target,
): Promise<LoadFigure> {
  return loadApart(label, { target, seconds, concurrency });
}

async function loadApart(label: string, job: LoadJob): Promise<LoadFigure> {
  client ??= new LoadClient();
  const { cpuMicros = 0, brokerCpuMs, clientCpuMs, ...answer } = await client.run(job);
  if ('error' in answer) throw new Error(`load for ${label}: ${answer.error}`);
  const perRequest = (ms: number | undefined) =>
    ms === undefined ? undefined : +(ms / Math.max(1, answer.requests)).toFixed(3);
  return {
    label,
    concurrency: job.concurrency,
    ...answer,
    cpuMsPerRequest: perRequest(cpuMicros / 1000),
    brokerCpuMsPerRequest: perRequest(brokerCpuMs),
    clientCpuMsPerRequest: perRequest(clientCpuMs),
  };
}

/**
 * Several contenders measured in interleaved rounds (a, b, c, a, b, c, ...), so a busy moment of a shared machine
 * hits them alike; each figure is the median round by throughput. Every round lasts the same time: counted in
 * requests, the fastest contender's rounds were the shortest (a fraction of a second for 6,000 GETs), so its figure
 * swung the most.
 */
export async function interleaved(
  rounds: number,
  seconds: number,
  concurrency: number,
  contenders: { label: string; target: Target }[],
): Promise<LoadFigure[]> {
  const results = contenders.map(() => [] as LoadFigure[]);
  for (const c of contenders) await timedLoopApart(`${c.label} (warm-up)`, seconds / 2, concurrency, c.target);
  for (let r = 0; r < rounds; r += 1) {
    for (const [i, c] of contenders.entries()) {
      results[i].push(await timedLoopApart(c.label, seconds, concurrency, c.target));
    }
  }
  return results.map(
    (figures) => [...figures].sort((a, b) => a.perSecond - b.perSecond)[Math.floor(figures.length / 2)],
  );
}

/** A POST with a JSON body that must answer `expected`. */
export function poster(url: string, body: unknown, headers: Record<string, string>, expected: number): Target {
  return {
    url,
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: JSON.stringify(body),
    expected,
  };
}

export function getter(url: string, headers: Record<string, string>): Target {
  return { url, method: 'GET', headers, expected: 200 };
}

/** One row of the summary table: a hookstream figure against a baseline measured in the same run. */
export interface Comparison {
  figure: string;
  hookstream: string;
  baseline: string;
  ratio: number | null;
}

export function compare(
  figure: string,
  ours: number,
  theirs: number | undefined,
  unit: string,
  baselineName = '',
): Comparison {
  return {
    figure,
    hookstream: `${ours} ${unit}`,
    baseline: theirs === undefined ? '-' : `${theirs} ${unit} (${baselineName})`,
    ratio: theirs ? +(ours / theirs).toFixed(2) : null,
  };
}

export function printTable(rows: Comparison[]): void {
  const header: Comparison = {
    figure: 'figure',
    hookstream: 'hookstream',
    baseline: 'baseline, same run',
    ratio: null,
  };
  const cells = [header, ...rows].map((r) => [
    r.figure,
    r.hookstream,
    r.baseline,
    r.ratio === null ? (r === header ? 'ratio' : '-') : `${r.ratio}x`,
  ]);
  const widths = cells[0].map((_, i) => Math.max(...cells.map((c) => c[i].length)));
  const line = (c: string[]) => `| ${c.map((v, i) => v.padEnd(widths[i])).join(' | ')} |`;
  console.log(line(cells[0]));
  console.log(`|${widths.map((w) => '-'.repeat(w + 2)).join('|')}|`);
  for (const c of cells.slice(1)) console.log(line(c));
}
