/*
 * Memory under a steady stream of tasks: `node dist/src/main.js all` as its own process, with a short retention
 * (TASK_RETENTION_MS), takes `tasks` tasks from a closed loop of 20 clients; its RSS is read after each quarter.
 * Once the retention window is full, finished tasks are forgotten as fast as new ones come, so the RSS after the
 * last quarter should be about the RSS after the first.
 */
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { closedLoopApart, poster } from './load';
import { freePort } from '../src/lib/free-port';
import { memoryMb, ready, rssMb } from './process-probe';

export interface SteadyFigure {
  tasks: number;
  retentionMs: number;
  /** RSS after each quarter of the stream */
  rssMb: number[];
  /** the process's V8 heap (used, total) and external memory after each quarter, from its /metrics */
  memoryMb: Awaited<ReturnType<typeof memoryMb>>[];
  tasksPerSecond: number;
}

const TASK = { type: 'countdown', input: { steps: 1, stepMs: 0 } };
const AUTH = (key: string) => ({ authorization: `Bearer ${key}` });

export async function steadyStream(brokers: string[], tasks: number, key: string): Promise<SteadyFigure> {
  const retentionMs = 5000;
  const port = await freePort();
  const child = spawn(process.execPath, [join(__dirname, '..', 'src', 'main.js'), 'all'], {
    stdio: 'ignore',
    env: {
      PATH: process.env.PATH ?? '',
      KAFKA_BROKERS: brokers.join(','),
      TOPIC_PREFIX: `bench.${Date.now()}.steady.`,
      PORT: String(port),
      HOST: '127.0.0.1',
      API_KEYS: `bench:${key}`,
      LOG_LEVEL: 'warn',
      TASK_RETENTION_MS: String(retentionMs),
    },
  });
  try {
    const base = `http://127.0.0.1:${port}`;
    await ready(base, () => child.exitCode);
    const quarter = Math.ceil(tasks / 4);
    const rss: number[] = [];
    const memory: SteadyFigure['memoryMb'] = [];
    const started = performance.now();
    for (let q = 0; q < 4; q += 1) {
      // The client in a process of its own, as in the api figures: the measured process is the service alone.
      await closedLoopApart('steady stream', quarter, 50, poster(`${base}/tasks`, TASK, AUTH(key), 202));
      rss.push(rssMb(child.pid as number));
      memory.push(await memoryMb(base));
    }
    const tasksPerSecond = Math.round((4 * quarter) / ((performance.now() - started) / 1000));
    return { tasks: 4 * quarter, retentionMs, rssMb: rss, memoryMb: memory, tasksPerSecond };
  } finally {
    child.kill('SIGTERM');
  }
}
