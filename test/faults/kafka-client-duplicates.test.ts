import { Kafka, logLevel, type Producer } from 'kafkajs';
import { untilGroupStable } from '../support/consumer-group';
import type { RunningService } from '../../src/service';
import { startChildService, type ChildService } from '../support/child-service';
import { awaitFinalStatuses, FINAL_STATUSES } from '../support/final-statuses';
import { finalsOf, orderProblem, TaskEventLog } from '../support/task-event-log';
import { startTestService, testBrokers, uniquePrefix } from '../support/test-service';
import { until } from '../support/until';

/*
 * Kafka clients submit every task three times, once to each partition of the requests topic (a request produced by
 * a Java client and retried with kcat, whose partitioner differs, lands on two). Two runner processes share the
 * partitions, so the copies of one task id reach both; while they come in, a runner is SIGKILLed twice and
 * SIGTERMed once, a replacement started before each stop. Each task id must still end in exactly one final event,
 * after exactly one task.accepted, its events in a valid order.
 */
const KAFKA_TIMEOUT_MS = '3000';
const STOPS = ['SIGKILL', 'SIGKILL', 'SIGTERM'] as const;
const PRODUCED_BETWEEN_STOPS = 15;
const PARTITIONS = [0, 1, 2];

describe('one task id produced to every partition, runners killed meanwhile', () => {
  const prefix = uniquePrefix('client-dupes');
  let api: RunningService;
  const runners: ChildService[] = [];
  let producer: Producer | undefined;
  let log: TaskEventLog | undefined;
  const env = { KAFKA_TIMEOUT_MS };

  beforeAll(async () => {
    api = await startTestService(prefix, { role: 'api', env });
    runners.push(...(await Promise.all([1, 2].map(() => startChildService('runner', prefix, env)))));
    await untilGroupStable(`${prefix}task-runner`, 2);
    producer = new Kafka({ brokers: testBrokers(), logLevel: logLevel.NOTHING }).producer();
    await producer.connect();
  }, 120000);

  afterAll(async () => {
    await producer?.disconnect();
    await log?.stop().catch(() => undefined);
    await Promise.all(runners.map((r) => r.kill('SIGKILL')));
    await api?.stop();
  }, 60000);

  test('0 lost, 0 with two final events or two task.accepted, every order valid', async () => {
    const taskIds: string[] = [];
    let producing = true;
    const produced = (async () => {
      for (let n = 0; producing; n += 1) {
        const taskId = `${prefix.replace(/\./g, '-')}${n}`;
        // Tasks of 0.2 to 1 s, so a stop finds some mid-run.
        const value = JSON.stringify({
          type: 'countdown',
          input: { steps: 2 + (n % 5), stepMs: 100 },
          tenant: 'tenant-a',
        });
        const order = n % 2 === 0 ? PARTITIONS : [...PARTITIONS].reverse();
        await producer?.send({
          topic: api.kafka.topics.taskRequests,
          messages: order.map((partition) => ({ key: taskId, value, partition })),
        });
        taskIds.push(taskId);
        await new Promise((r) => setTimeout(r, 200));
      }
    })();
    const stops: string[] = [];
    try {
      for (const signal of STOPS) {
        const at = taskIds.length + PRODUCED_BETWEEN_STOPS;
        await until(async () => (taskIds.length >= at ? true : undefined), 60000);
        const victim = runners.filter((r) => r.running)[0];
        runners.push(await startChildService('runner', prefix, env));
        await victim.kill(signal);
        stops.push(`${signal}@${taskIds.length}`);
      }
      const last = taskIds.length + PRODUCED_BETWEEN_STOPS;
      await until(async () => (taskIds.length >= last ? true : undefined), 60000);
    } finally {
      producing = false;
      await produced;
    }

    const statuses = await awaitFinalStatuses(api.url, taskIds, 90000);
    log = await new TaskEventLog(testBrokers(), api.kafka.topics.taskEvents).start();
    await log.catchUp(60000);
    const byTask = log.byTask;
    const problems = taskIds
      .map((id) => ({ id, problem: orderProblem(byTask.get(id) ?? []) }))
      .filter((p) => p.problem !== undefined);
    const figures = {
      produced: taskIds.length,
      stops,
      lost: taskIds.filter((id) => !FINAL_STATUSES.includes(statuses.get(id) ?? '')).length,
      doubleFinals: taskIds.filter((id) => finalsOf(byTask.get(id)) > 1).length,
      orderProblems: problems.length,
      examples: problems.slice(0, 3).map((p) => `${p.id}: ${p.problem}`),
    };
    console.log(`kafka-client-duplicates: ${JSON.stringify(figures)}`);
    expect(stops).toHaveLength(STOPS.length);
    expect({ lost: figures.lost, doubleFinals: figures.doubleFinals, orderProblems: figures.orderProblems }).toEqual({
      lost: 0,
      doubleFinals: 0,
      orderProblems: 0,
    });
  }, 300000);
});
