/*
 * The task runner alone draining a backlog: tasks accepted by an api with no
 * runner beside it, then a runner (role runner, alone in its process) started
 * over them. The figure runs from the first final event to the last, start-up
 * left out, so it reads against the api's accept rate: a runner slower than
 * that is a reason for a backlog to grow.
 */
import { isFinal, isSnapshot, TASKS_VIEW, type TaskRecord } from '../src/tasks/task-snapshot';
import { benchEnv, startRole } from './bridge-fixture';
import { closedLoop } from './load';

export interface RunnerDrainFigure {
  tasks: number;
  /** the same tasks accepted by the api alone (c=50, client in this process): what the runner must keep up with */
  apiAcceptedPerSecond: number;
  runnerPerSecond: number;
  /** from starting the runner to its first final event */
  runnerFirstFinalMs: number;
  /** CPU time of this process (the runner alone by then) per task, first final to last: less noisy than the rate */
  cpuMsPerTask: number;
}

export async function runnerDrain(
  brokers: string[],
  tasks: number,
  key: string,
  task: object,
): Promise<RunnerDrainFigure> {
  const env = benchEnv(brokers, 'runner-drain', key);
  const api = await startRole(brokers, env, 'api');
  const ids = new Set<string>();
  let apiAcceptedPerSecond = 0;
  try {
    ({ perSecond: apiAcceptedPerSecond } = await closedLoop('runner drain: submit', tasks, 50, async () => {
      const res = await fetch(`${api.url}/tasks`, {
        method: 'POST',
        headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
        body: JSON.stringify(task),
      });
      if (res.status !== 202) throw new Error(`POST /tasks answered ${res.status}`);
      ids.add(((await res.json()) as { taskId: string }).taskId);
    }));
  } finally {
    await api.stop();
  }

  const started = performance.now();
  let firstAt = 0;
  let lastAt = 0;
  let finished = 0;
  let cpuAtFirst = process.cpuUsage();
  let cpuMsPerTask = NaN;
  const runner = await startRole(brokers, env, 'runner');
  try {
    const view = await runner.kafka.view(TASKS_VIEW);
    await new Promise<void>((resolve) => {
      const seen = new Set<string>();
      const count = (key: string, value: TaskRecord | undefined) => {
        if (!ids.has(key) || seen.has(key) || !isSnapshot(value) || !isFinal(value.status)) return;
        seen.add(key);
        lastAt = performance.now();
        if (finished === 0) {
          firstAt = lastAt;
          cpuAtFirst = process.cpuUsage();
        }
        finished += 1;
        if (finished === ids.size) resolve();
      };
      view.onChange(count);
      for (const id of ids) count(id, view.get(id));
    });
    const cpu = process.cpuUsage(cpuAtFirst);
    cpuMsPerTask = (cpu.user + cpu.system) / 1000 / Math.max(1, finished - 1);
  } finally {
    await runner.stop();
  }
  return {
    tasks: ids.size,
    apiAcceptedPerSecond,
    runnerPerSecond: Math.round((finished - 1) / Math.max(0.001, (lastAt - firstAt) / 1000)),
    runnerFirstFinalMs: Math.round(firstAt - started),
    cpuMsPerTask: +cpuMsPerTask.toFixed(3),
  };
}
