import { readFileSync } from 'node:fs';
import { javaMajorVersion } from '../../src/embedded-kafka/local-broker-jars';
import { topicNames } from '../../src/kafka/topics';
import { ChaosReceiver } from '../support/chaos-receiver';
import { startChildService, type ChildService } from '../support/child-service';
import { awaitFinalStatuses, FINAL_STATUSES } from '../support/final-statuses';
import { OwnBroker } from '../support/own-broker';
import { settled } from '../support/settled';
import { openSse, type SseReading } from '../support/sse-client';
import { http } from '../support/http';
import { finalsOf, FINAL_EVENTS, TaskEventLog } from '../support/task-event-log';
import { TaskLoad, type Submission } from '../support/task-load';
import { uniquePrefix } from '../support/test-service';
import { until } from '../support/until';

/*
 * The broker is SIGKILLed, restarted on the same data and port, later
 * SIGTERMed and restarted again, while tasks with once-subscriptions are
 * submitted over HTTP to an api, a runner and a bridge running as their own
 * processes, and one long task is followed over SSE throughout. The shared
 * test broker must stay up, so this file starts its own from the Kafka jars
 * (Java 17+).
 */
const hasJava = (javaMajorVersion() ?? 0) >= 17;
const maybe = hasJava ? describe : describe.skip;
if (!hasJava) console.warn('broker-faults test skipped: it starts its own broker from the Kafka jars (Java 17+)');

const KAFKA_TIMEOUT_MS = 3000;
/*
 * The README promises every answer within KAFKA_TIMEOUT_MS + 500 ms. That is
 * asserted on the api's own response times (its request log). The client's
 * view adds loopback and a shared 2-core machine's scheduling, so its bound is
 * looser (+1500 ms); the summary line prints the largest of both.
 */
const SERVER_BOUND_MS = KAFKA_TIMEOUT_MS + 500;
const ANSWER_BOUND_MS = KAFKA_TIMEOUT_MS + 1500;
/** The README promises writes again within 15 s of the broker accepting connections (measured: 1-9 s). */
const RECOVERY_BOUND_MS = 15000;
/** 202s before the first outage, and after each recovery before the next step. */
const ACCEPTED_BEFORE_OUTAGE = 60;
const ACCEPTED_AFTER_RECOVERY = 45;
const PROBLEM_TYPE = 'https://hookstream.dev/problems/kafka-unavailable';

interface Outage {
  how: 'SIGKILL' | 'SIGTERM';
  downAt: number;
  portOpenAt: number;
  recoveryMs: number;
}

/** The api's own response times of POST /tasks, with their status, from its info-level request log. */
function serverResponseTimes(logFile: string): { status: number; ms: number }[] {
  type Entry = {
    msg?: string;
    req?: { method?: string; url?: string };
    res?: { statusCode?: number };
    responseTime?: number;
  };
  const entries = readFileSync(logFile, 'utf8')
    .split('\n')
    .flatMap((line): Entry[] => {
      try {
        return line.startsWith('{') ? [JSON.parse(line) as Entry] : [];
      } catch {
        return [];
      }
    });
  // One line per request, once answered, with its method and URL.
  const isSubmission = (e: Entry) => e.req?.method === 'POST' && e.req.url === '/tasks';
  const completed = (e: Entry) => e.msg === 'request completed' && e.res?.statusCode && e.responseTime !== undefined;
  return entries
    .filter((e) => completed(e) && isSubmission(e))
    .map((e) => ({ status: e.res?.statusCode as number, ms: e.responseTime as number }));
}

const answered = (s: Submission) => s.status !== 0 || s.error !== undefined;
const latency = (s: Submission) => s.answeredAt - s.sentAt;
const isProblem = (s: Submission) =>
  s.contentType.startsWith('application/problem+json') &&
  s.problemType === PROBLEM_TYPE &&
  /^\d+$/.test(s.retryAfter ?? '');

maybe('broker SIGKILL and SIGTERM under load, restarted on the same data', () => {
  const broker = new OwnBroker();
  const receiver = new ChaosReceiver();
  const children: ChildService[] = [];
  let log: TaskEventLog | undefined;
  let load: TaskLoad | undefined;
  const prefix = uniquePrefix('broker-faults');

  beforeAll(async () => {
    await broker.start();
    await receiver.start();
    const env = {
      KAFKA_BROKERS: broker.bootstrap,
      KAFKA_TIMEOUT_MS: String(KAFKA_TIMEOUT_MS),
      CALLBACK_ALLOW_PRIVATE: 'true',
      CALLBACK_BACKOFF_BASE_MS: '200',
      CALLBACK_BACKOFF_MAX_MS: '2000',
      CALLBACK_MAX_ATTEMPTS: '30',
    };
    const roles = ['api', 'runner', 'bridge'];
    // The api logs every request with its own response time (info), which the deadline is checked on.
    const envOf = (role: string) => (role === 'api' ? { ...env, LOG_LEVEL: 'info' } : env);
    children.push(...(await Promise.all(roles.map((role) => startChildService(role, prefix, envOf(role))))));
  }, 180000);

  afterAll(async () => {
    await load?.stop();
    await log?.stop().catch(() => undefined);
    await Promise.all(children.map((c) => c.kill('SIGKILL')));
    await receiver.stop();
    await broker.remove();
  }, 60000);

  test('0 tasks lost, 0 double finals, 0 missed callbacks; 503s are bounded Problems; writes recover', async () => {
    const apiUrl = children[0].url as string;
    load = new TaskLoad({
      api: apiUrl,
      workers: 6,
      paceMs: 50,
      failurePaceMs: 500,
      maxAccepted: 300,
      body: (n) => ({
        type: 'countdown',
        input: { steps: 3 + (n % 8), stepMs: (n * 7) % 21 },
        callbackUrl: `${receiver.url}/cb/${n}`,
      }),
    }).start();
    const running = load;
    // One long task streamed over SSE from before the first outage: the stream outlives the broker's restarts.
    const long = await http(apiUrl, '/tasks', { body: { type: 'countdown', input: { steps: 180, stepMs: 250 } } });
    expect(long.status).toBe(202);
    const streamedId = (long.body as { taskId: string }).taskId;
    const stream: SseReading = await openSse(apiUrl, `/tasks/${streamedId}/events`);
    const streamOpenedAt = Date.now();
    let streamEndedAt = 0;
    void stream.ended.then(() => (streamEndedAt = Date.now()));
    const acceptedSince = (t: number) => running.accepted.filter((s) => s.sentAt >= t).length;

    async function outage(how: Outage['how']): Promise<Outage> {
      const downAt = Date.now();
      if (how === 'SIGKILL') await broker.kill();
      else await broker.terminate();
      // A few answers to requests sent while it is down, to measure them, before it comes back.
      await until(async () => (running.sentAfter(downAt).filter(answered).length >= 3 ? true : undefined), 30000);
      const restarted = broker.start();
      const opened = async () => ((await broker.acceptsConnections()) ? Date.now() : undefined);
      const portOpenAt = await until(opened, 120000, 100);
      await restarted;
      const first = await until(async () => running.accepted.find((s) => s.sentAt >= portOpenAt), 90000, 100).catch(
        () => undefined,
      );
      return { how, downAt, portOpenAt, recoveryMs: first ? first.answeredAt - portOpenAt : Infinity };
    }

    const began = Date.now();
    const outages: Outage[] = [];
    // A phase that stalls is reported with the counts, not instead of them.
    let stalled: string | undefined;
    try {
      stalled = 'before the first outage';
      await until(async () => (running.accepted.length >= ACCEPTED_BEFORE_OUTAGE ? true : undefined), 60000);
      for (const how of ['SIGKILL', 'SIGTERM'] as const) {
        stalled = `in the ${how} outage`;
        const o = await outage(how);
        outages.push(o);
        stalled = `no 202 after the ${how} outage`;
        if (o.recoveryMs === Infinity) throw new Error('never recovered');
        stalled = `after the ${how} outage`;
        await until(async () => (acceptedSince(o.portOpenAt) >= ACCEPTED_AFTER_RECOVERY ? true : undefined), 60000);
      }
      stalled = undefined;
    } catch (err) {
      stalled = `${stalled}: ${String(err)}`;
    } finally {
      await running.stop();
    }

    const accepted = running.accepted;
    const taskIds = accepted.map((s) => s.taskId as string);
    const statuses = await awaitFinalStatuses(apiUrl, taskIds, 60000);
    const acceptedFor = (s: Submission) =>
      receiver.deliveries.filter((d) => d.subscription === s.subscriptionId && d.accepted);
    const calledBack = (s: Submission) => acceptedFor(s).length > 0;
    const allCalledBack = await settled(async () => (accepted.every(calledBack) ? true : undefined), 30000);

    await settled(async () => (streamEndedAt > 0 ? true : undefined), 90000);
    stream.close();
    log = await new TaskEventLog([broker.bootstrap], topicNames(prefix).taskEvents).start();
    await log.catchUp(60000);
    const byTask = log.byTask;
    const onTopic = (byTask.get(streamedId) ?? []).map((e) => `${e.partition}:${e.offset} ${e.kind}`);
    const overSse = stream.events.map((e) => `${e.id} ${e.event}`);
    const finals = taskIds.map((id) => finalsOf(byTask.get(id)));
    const callbacks = accepted.map((s) => {
      const got = acceptedFor(s);
      const finalOnTopic = byTask.get(s.taskId as string)?.find((e) => FINAL_EVENTS.includes(e.kind))?.kind;
      const right = got.every((d) => d.event === finalOnTopic);
      return { ids: new Set(got.map((d) => d.webhookId)).size, receipts: got.length, right };
    });
    const unavailable = running.submissions.filter((s) => s.status === 503);
    const known = new Set([...taskIds, streamedId]);
    // Written although the client was told 503: allowed, but GET must show each (issue 8, item 4).
    const despite503 = [...byTask.keys()].filter((id) => !known.has(id));
    const invisible: string[] = [];
    for (const id of despite503) if ((await http(apiUrl, `/tasks/${id}`)).status !== 200) invisible.push(id);
    const other = running.submissions.filter((s) => s.status !== 202 && s.status !== 503);
    const serverTimes = serverResponseTimes(children[0].logFile);
    const figures = {
      submitted: running.submissions.length,
      accepted: accepted.length,
      unavailable: unavailable.length,
      stalled,
      otherAnswers: other.map((s) => s.status || s.error),
      notFinalViaGet: taskIds.filter((id) => !FINAL_STATUSES.includes(statuses.get(id) ?? '')).length,
      noFinalOnTopic: finals.filter((n) => n === 0).length,
      doubleFinals: finals.filter((n) => n > 1).length,
      missedCallbacks: callbacks.filter((c) => c.ids === 0).length,
      extraCallbacks: callbacks.filter((c) => c.ids > 1).length,
      wrongCallbackEvent: callbacks.filter((c) => c.ids > 0 && !c.right).length,
      duplicateReceipts: callbacks.reduce((n, c) => n + c.receipts - c.ids, 0),
      writtenDespite503: despite503.length,
      invisibleViaGet: invisible.length,
      badProblems: unavailable.filter((s) => !isProblem(s)).length,
      max503Ms: Math.max(0, ...unavailable.map(latency)),
      // One deadline for every request that needs Kafka, whatever it answers.
      maxAnswerMs: Math.max(0, ...running.submissions.map(latency)),
      serverAnswers: serverTimes.length,
      serverMax503Ms: Math.round(Math.max(0, ...serverTimes.filter((t) => t.status === 503).map((t) => t.ms))),
      serverMaxAnswerMs: Math.round(Math.max(0, ...serverTimes.map((t) => t.ms))),
      recoveryMs: outages.map((o) => `${o.how}:${o.recoveryMs}`),
      // The stream's events are the task's on the topic, every one in order, ending with its one final event.
      streamedEvents: overSse.length,
      streamMatchesTopic: overSse.join() === onTopic.join() && FINAL_EVENTS.includes(stream.events.at(-1)?.event ?? ''),
      // Open before the first outage, ended (with the final event) after the broker came back from the last.
      streamSpannedOutages:
        streamOpenedAt < (outages[0]?.downAt ?? 0) && streamEndedAt > (outages.at(-1)?.portOpenAt ?? Infinity),
      timelineS: outages.map((o) => `${o.how} down@${(o.downAt - began) / 1000} up@${(o.portOpenAt - began) / 1000}`),
      totalS: (Date.now() - began) / 1000,
      childrenAlive: children.filter((c) => c.running).length,
      doubleFinalTasks: taskIds
        .filter((_, i) => finals[i] > 1)
        .slice(0, 3)
        .map((id) => {
          const events = byTask.get(id) ?? [];
          return `${id}: ${events.map((e) => `${e.kind.replace('task.', '')}#${e.attempt}@${e.partition}:${e.offset}`).join(',')}`;
        }),
    };
    // A task GET did not show final: what the api's view holds against the topic, and whether it says it caught up.
    const notFinalTasks = taskIds.filter((id) => !FINAL_STATUSES.includes(statuses.get(id) ?? '')).slice(0, 3);
    for (const id of notFinalTasks) {
      const got = await http(apiUrl, `/tasks/${id}`);
      const events = (byTask.get(id) ?? []).map((e) => `${e.kind}#${e.attempt}@${e.partition}:${e.offset}`);
      console.log(`broker-faults: not final via GET ${id}: ${JSON.stringify(got.body)} on topic: ${events.join(',')}`);
    }
    if (notFinalTasks.length > 0) {
      console.log(`broker-faults: api readiness ${JSON.stringify((await http(apiUrl, '/health/ready')).body)}`);
    }
    const logs = [...children.map((c) => c.logFile), broker.logFile].join(' ');
    console.log(`broker-faults: ${JSON.stringify(figures)} allCalledBack=${allCalledBack} logs: ${logs}`);

    expect(stalled).toBeUndefined();
    expect(outages.map((o) => o.how)).toEqual(['SIGKILL', 'SIGTERM']);
    expect(unavailable.length).toBeGreaterThan(0);
    const { otherAnswers, notFinalViaGet, noFinalOnTopic, doubleFinals, missedCallbacks, extraCallbacks } = figures;
    const { wrongCallbackEvent, invisibleViaGet, badProblems, childrenAlive } = figures;
    const { streamMatchesTopic, streamSpannedOutages } = figures;
    expect({
      otherAnswers,
      notFinalViaGet,
      noFinalOnTopic,
      doubleFinals,
      missedCallbacks,
      extraCallbacks,
      wrongCallbackEvent,
      invisibleViaGet,
      badProblems,
      childrenAlive,
      streamMatchesTopic,
      streamSpannedOutages,
    }).toEqual({
      otherAnswers: [],
      notFinalViaGet: 0,
      noFinalOnTopic: 0,
      doubleFinals: 0,
      missedCallbacks: 0,
      extraCallbacks: 0,
      wrongCallbackEvent: 0,
      invisibleViaGet: 0,
      badProblems: 0,
      childrenAlive: 3,
      streamMatchesTopic: true,
      streamSpannedOutages: true,
    });
    // Every submission the client saw answered is in the api's log (and the streamed task's), or the server-side
    // bound proves nothing.
    expect(figures.serverAnswers).toBe(running.submissions.filter((s) => s.status > 0).length + 1);
    expect(figures.serverMaxAnswerMs).toBeLessThanOrEqual(SERVER_BOUND_MS);
    expect(figures.max503Ms).toBeLessThanOrEqual(ANSWER_BOUND_MS);
    expect(figures.maxAnswerMs).toBeLessThanOrEqual(ANSWER_BOUND_MS);
    for (const o of outages) expect(o.recoveryMs).toBeLessThanOrEqual(RECOVERY_BOUND_MS);
  }, 300000);
});
