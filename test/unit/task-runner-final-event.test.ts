import type { OutgoingRecord } from '../../src/kafka/types';
import { problemType } from '../../src/problems/problem-types';
import { cancelKey } from '../../src/tasks/task-snapshot';
import { defineTaskType, type TaskType } from '../../src/tasks/task-type';
import { FakeLog, request, runner, startedBefore, topics } from './runner-fakes';

/*
 * "Exactly one final event" against the worst answers a broker gives: a write
 * that committed but whose caller saw a failure (an ambiguous timeout). Fakes
 * of the project's own ports stand in for Kafka; the fencing itself is proved
 * on a real broker by the fault tests.
 */
const isFinalWrite = (records: OutgoingRecord[]) => records.some((r) => String(r.value).includes('"task.succeeded"'));

describe('task runner: exactly one final event', () => {
  test('a final write that committed but timed out is not written again', async () => {
    const log = new FakeLog();
    log.beforePublish = (records) => {
      if (isFinalWrite(records) && log.finals('t1').length === 0) log.ambiguous = 1;
    };
    const handle = await runner(log);
    await handle(request('t1', 0), new AbortController().signal);
    expect(log.finals('t1')).toEqual(['task.succeeded']);
    expect(log.ambiguousSeen).toBe(1);
  });

  test('a final write that failed without committing is written again, once', async () => {
    const log = new FakeLog();
    let failed = false;
    log.beforePublish = (records) => {
      if (isFinalWrite(records) && !failed) {
        failed = true;
        log.failing = 1;
      }
    };
    const handle = await runner(log);
    await handle(request('t2', 0), new AbortController().signal);
    expect(failed).toBe(true);
    expect(log.finals('t2')).toEqual(['task.succeeded']);
  });

  test('a final that committed but timed out, then a failed sync, is not written again', async () => {
    // Only the view can tell that it committed, and the first look at it fails: the runner must look again, not write.
    const log = new FakeLog();
    let armed = false;
    log.beforePublish = (records) => {
      if (isFinalWrite(records) && !armed) {
        armed = true;
        log.ambiguous = 1;
        log.view.failSyncs = 1;
        // The failed sync must happen: a sync that began in this same millisecond (the run's start, on a fast
        // machine) would otherwise count as covering the next request, and skip it, as KafkaStateView does.
        log.view.syncedAt = 0;
      }
    };
    const handle = await runner(log);
    await handle(request('t4', 0), new AbortController().signal);
    expect(armed).toBe(true);
    expect(log.view.failSyncs).toBe(0);
    expect(log.finals('t4')).toEqual(['task.succeeded']);
  });

  test('the same request delivered twice at once (a re-fetch, a duplicate produce) runs once', async () => {
    const log = new FakeLog();
    const handle = await runner(log);
    const signal = new AbortController().signal;
    await Promise.all([
      handle(request('t3', 0), signal),
      handle(request('t3', 0), signal),
      handle(request('t3', 1), signal),
    ]);
    expect(log.finals('t3')).toEqual(['task.succeeded']);
    const started = log.records.filter(
      (r) => r.topic === topics.taskEvents && String(r.value).includes('"task.started"'),
    );
    expect(started).toHaveLength(1);
  });

  test('a run whose task.started failed stops at once and runs again, instead of running its handler for nothing', async () => {
    // The first run would wait until it is aborted: only the failed write can stop it before the 10 s task timeout.
    // The retry is attempt 1 again, as the failed task.started never landed.
    let runs = 0;
    const stubborn = defineTaskType<unknown, { runs: number }>({
      name: 'stubborn',
      description: 'waits for its signal on its first run; succeeds at once after',
      inputSchema: { type: 'object' },
      async run({ signal }) {
        runs += 1;
        if (runs === 1) await new Promise((_, reject) => signal.addEventListener('abort', () => reject(signal.reason)));
        return { runs };
      },
    });
    const log = new FakeLog();
    let failedStarted = false;
    log.beforePublish = (records) => {
      if (!failedStarted && records.some((r) => String(r.value).includes('"task.started"'))) {
        failedStarted = true;
        log.failing = 1;
      }
    };
    const handle = await runner(log, [stubborn as TaskType]);
    const started = Date.now();
    const record = { ...request('t5', 0), value: JSON.stringify({ type: 'stubborn', input: {}, tenant: 't' }) };
    await handle(record, new AbortController().signal);
    expect(failedStarted).toBe(true);
    expect(log.finals('t5')).toEqual(['task.succeeded']);
    const final = log.records.find((r) => r.key === 't5' && String(r.value).includes('"task.succeeded"'));
    expect(JSON.parse(String(final?.value)).data).toEqual({ result: { runs: 2 } });
    expect(Date.now() - started).toBeLessThan(9000);
  });
});

describe('task runner: a run superseded by a later attempt', () => {
  /**
   * Runs one task whose first run is overtaken: meanwhile another runner ran it as attempt 2, which it left as
   * `status` (the view shows it so as the first run ends). Returns how many times it ran here.
   */
  async function overtakenTo(log: FakeLog, taskId: string, status: 'running' | 'succeeded'): Promise<number> {
    let runs = 0;
    const overtaken = defineTaskType<unknown, { runs: number }>({
      name: 'overtaken',
      description: 'on its first run, another runner runs it meanwhile as attempt 2',
      inputSchema: { type: 'object' },
      async run() {
        runs += 1;
        const now = log.view.get(taskId);
        if (runs === 1 && now && 'attempt' in now) log.view.set(taskId, { ...now, attempt: 2, status });
        return { runs };
      },
    });
    const handle = await runner(log, [overtaken as TaskType]);
    const record = { ...request(taskId, 0), value: JSON.stringify({ type: 'overtaken', input: {}, tenant: 't' }) };
    await handle(record, new AbortController().signal);
    return runs;
  }

  test("a later attempt that left no final event (its runner lost the partition) does not end this one's record: the task runs again to its final event", async () => {
    // The chaos audit's case: this member kept the partition across a generation it missed, in which another runner
    // ran the task as attempt 2 and then lost the partition again. This run (attempt 1) ends after that.
    const log = new FakeLog();
    expect(await overtakenTo(log, 't7', 'running')).toBe(2);
    expect(log.finals('t7')).toEqual(['task.succeeded']);
    expect(log.view.get('t7')).toMatchObject({ status: 'succeeded', attempt: 3 });
  });

  test('a later attempt that wrote its final event: this run ends without another', async () => {
    const log = new FakeLog();
    expect(await overtakenTo(log, 't8', 'succeeded')).toBe(1);
    expect(log.finals('t8')).toEqual([]);
  });
});

describe('task runner: a task cancelled before it starts', () => {
  test('never runs: its events go from task.accepted to task.cancelled, with no task.started and no attempt', async () => {
    const log = new FakeLog();
    let ran = false;
    const watched = defineTaskType({
      name: 'countdown',
      description: 'records whether it ran',
      inputSchema: { type: 'object' },
      async run() {
        ran = true;
        return {};
      },
    });
    const handle = await runner(log, [watched]);
    log.view.set(cancelKey('c1'), { cancel: true, taskId: 'c1', requestedAt: new Date().toISOString() });
    await handle(request('c1', 0), new AbortController().signal);
    const events = log.records
      .filter((r) => r.topic === topics.taskEvents && r.key === 'c1')
      .map((r) => JSON.parse(String(r.value)).event);
    expect(events).toEqual(['task.accepted', 'task.cancelled']);
    expect(ran).toBe(false);
    expect(log.view.get('c1')).toMatchObject({ status: 'cancelled', attempt: 0 });
    expect(log.view.get('c1')).not.toHaveProperty('startedAt');
  });
});

describe('task runner: one deadline per task, counted from its first start', () => {
  const eventsOf = (log: FakeLog, taskId: string) =>
    log.records
      .filter((r) => r.topic === topics.taskEvents && r.key === taskId)
      .map((r) => JSON.parse(String(r.value)));
  /** A type whose run ends only when its signal says so: how long it runs is the deadline's business. */
  const patient = (runs: string[]) =>
    defineTaskType({
      name: 'countdown',
      description: 'waits for its signal',
      inputSchema: { type: 'object' },
      timeoutMs: 60000,
      run: ({ signal }) =>
        new Promise((_, reject) => {
          runs.push('ran');
          signal.addEventListener('abort', () => reject(signal.reason), { once: true });
        }),
    });

  test('a rerun that begins past the deadline fails at once, timed out, without running or task.started', async () => {
    const log = new FakeLog();
    const runs: string[] = [];
    const handle = await runner(log, [patient(runs)]);
    startedBefore(log, 'late', 61000);
    await handle(request('late', 0), new AbortController().signal);
    expect(runs).toEqual([]);
    const events = eventsOf(log, 'late');
    expect(events.map((e) => e.event)).toEqual(['task.failed']);
    expect(events[0].data.problem.type).toBe(problemType('task-timed-out'));
    expect(log.view.get('late')).toMatchObject({ status: 'failed', attempt: 1 });
  }, 10000);

  // The runner was down at the deadline, so the api, which does not judge deadlines, may accept a cancel after it.
  test.each([
    ['after', 'task.failed', 500],
    ['before', 'task.cancelled', 30000],
  ])(
    'a rerun past the deadline with a cancel accepted %s the deadline ends %s',
    async (_, final, agoMs) => {
      const log = new FakeLog();
      const runs: string[] = [];
      const handle = await runner(log, [patient(runs)]);
      // The deadline was 1 s ago (a 60 s timeout, started 61 s ago).
      startedBefore(log, 'cancelled-late', 61000);
      const requestedAt = new Date(Date.now() - agoMs).toISOString();
      log.view.set(cancelKey('cancelled-late'), { cancel: true, taskId: 'cancelled-late', requestedAt });
      await handle(request('cancelled-late', 0), new AbortController().signal);
      expect(runs).toEqual([]);
      const events = eventsOf(log, 'cancelled-late');
      expect(events.map((e) => e.event)).toEqual([final]);
      if (final === 'task.failed') expect(events[0].data.problem.type).toBe(problemType('task-timed-out'));
    },
    10000,
  );

  test('a rerun gets what is left of the deadline, not a new one, and keeps the first start', async () => {
    const log = new FakeLog();
    const runs: string[] = [];
    const handle = await runner(log, [patient(runs)]);
    const first = Date.now() - 59700;
    startedBefore(log, 'rerun', 59700);
    // With a fresh 60 s deadline this would outlast the test's own 10 s bound.
    await handle(request('rerun', 0), new AbortController().signal);
    expect(runs).toEqual(['ran']);
    const events = eventsOf(log, 'rerun');
    expect(events.map((e) => e.event)).toEqual(['task.started', 'task.failed']);
    expect(events[0].data.attempt).toBe(2);
    expect(events[1].data.problem.type).toBe(problemType('task-timed-out'));
    expect(Date.parse((log.view.get('rerun') as { startedAt: string }).startedAt)).toBeLessThanOrEqual(first + 5);
  }, 10000);
});

describe('task runner: a final write that failed as the partition was handed back', () => {
  test('settles nothing after the hand-back: a settle would make a writer that fences the next owner', async () => {
    const log = new FakeLog();
    const handBack = new AbortController();
    let settlesAfter = 0;
    const fencing = () => {
      const publisher = log.publisher();
      const settled = publisher.settled.bind(publisher);
      return Object.assign(publisher, {
        settled: () => {
          if (handBack.signal.aborted) settlesAfter += 1;
          return settled();
        },
      });
    };
    log.beforePublish = (records) => {
      if (!isFinalWrite(records) || log.ambiguousSeen > 0) return;
      // The final write's answer is lost; the rebalance comes during the pause before its settle (50-100 ms here).
      log.ambiguous = 1;
      setTimeout(() => handBack.abort(), 20);
    };
    const handle = await runner(log, undefined, { fencingPublisher: fencing, retryDelayMs: 400 });
    await handle(request('t9', 0), handBack.signal);
    expect(log.ambiguousSeen).toBe(1);
    expect(settlesAfter).toBe(0);
  });
});
