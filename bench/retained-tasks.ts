/*
 * An api restarted over a full retention window: N finished tasks are written
 * to the tasks topic (as the runner leaves them), then `node dist/src/main.js
 * api` is started as its own process and timed until /health/ready answers
 * 200 (its views have read everything); its RSS is read from /proc then, and
 * again after it has served a GET of every 1000th task.
 */
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { randomUUID } from 'node:crypto';
import { connectKafka } from '../src/kafka/kafka-gateway';
import { createLogger } from '../src/logger';
import type { TaskSnapshot } from '../src/tasks/task-snapshot';
import { freePort } from '../src/lib/free-port';
import { ready, rssMb } from './process-probe';

export interface RetainedFigure {
  tasks: number;
  readyMs: number;
  rssMbReady: number;
  rssMbAfterReads: number;
}

function finishedTask(tenant: string, topic: string, i: number): TaskSnapshot {
  const now = new Date().toISOString();
  return {
    taskId: randomUUID(),
    tenant,
    type: 'countdown',
    status: 'succeeded',
    topic,
    partition: i % 3,
    offset: i,
    attempt: 1,
    progress: { current: 10, total: 10 },
    result: { steps: 10 },
    createdAt: now,
    startedAt: now,
    finishedAt: now,
    updatedAt: now,
  } as TaskSnapshot;
}

export async function retainedTasks(brokers: string[], count: number, key: string): Promise<RetainedFigure> {
  const prefix = `bench.${Date.now()}.retained.`;
  const kafka = await connectKafka({
    brokers,
    topicPrefix: prefix,
    partitions: 3,
    timeoutMs: 30000,
    processName: 'bench',
    logger: createLogger('warn'),
  });
  const ids: string[] = [];
  try {
    const chunk = 500;
    const writes: Promise<unknown>[] = [];
    for (let i = 0; i < count; i += chunk) {
      const records = Array.from({ length: Math.min(chunk, count - i) }, (_, j) => {
        const t = finishedTask('bench', kafka.topics.taskEvents, i + j);
        if ((i + j) % 1000 === 0) ids.push(t.taskId);
        return { topic: kafka.topics.tasks, key: t.taskId, value: JSON.stringify(t) };
      });
      writes.push(kafka.publisher.publish(records));
      if (writes.length >= 8) await Promise.all(writes.splice(0));
    }
    await Promise.all(writes);
  } finally {
    await kafka.close();
  }

  const port = await freePort();
  const started = performance.now();
  const child = spawn(process.execPath, [join(__dirname, '..', 'src', 'main.js'), 'api'], {
    stdio: 'ignore',
    env: {
      PATH: process.env.PATH ?? '',
      KAFKA_BROKERS: brokers.join(','),
      TOPIC_PREFIX: prefix,
      PORT: String(port),
      HOST: '127.0.0.1',
      API_KEYS: `bench:${key}`,
      LOG_LEVEL: 'warn',
    },
  });
  try {
    const base = `http://127.0.0.1:${port}`;
    await ready(base, () => child.exitCode);
    const readyMs = Math.round(performance.now() - started);
    const rssMbReady = rssMb(child.pid as number);
    for (const id of ids) {
      const res = await fetch(`${base}/tasks/${id}`, { headers: { authorization: `Bearer ${key}` } });
      if (res.status !== 200)
        throw new Error(`GET /tasks/${id} answered ${res.status}: the restarted api lost a retained task`);
      await res.text();
    }
    return { tasks: count, readyMs, rssMbReady, rssMbAfterReads: rssMb(child.pid as number) };
  } finally {
    child.kill('SIGTERM');
  }
}
