import { randomUUID } from 'node:crypto';
import type { RunningService } from '../../src/service';
import { auditSubscription, type CallbackAudit } from '../support/callback-audit';
import { chaosPolicy, ChaosReceiver } from '../support/chaos-receiver';
import { startChildService, type ChildService } from '../support/child-service';
import { settled } from '../support/settled';
import { FINAL_EVENTS, finalsOf, orderProblem, TaskEventLog, type LoggedEvent } from '../support/task-event-log';
import { startTestService, TENANT_A_KEY, testBrokers, uniquePrefix } from '../support/test-service';
import { until } from '../support/until';

/*
 * README "Callbacks": a subscription to a task made over POST /subscriptions gets the task's events from its first
 * one, whenever it is made (while the task runs, as it finishes, after it finished), and this holds "across bridge
 * crashes and restarts". Here 48 countdown tasks are each subscribed to once, at a varied moment: at once after the
 * 202, once the task is seen running, once it is seen finished, or 1.5-4 s after that (the bridge has long read and
 * committed its events by then, so only the backlog cursor the api writes with the subscription can bring them back).
 * Half the subscriptions are `once`, half `continuous`, spread over every moment. The receiver fails some first
 * attempts (a 500, a 429 with Retry-After, a hang past the callback timeout; see chaosPolicy). Meanwhile the bridge,
 * its own process, is SIGKILLed three times and SIGTERMed once, each time after it has delivered callbacks since it
 * came up (the first stops while tasks are still being subscribed to, the last ones while their backlogs are being
 * delivered), and started again; some subscriptions are made while no bridge runs.
 *
 * Proved, by counting:
 * - every `once` subscription ends `cancelled` with cancelReason `delivered-once`, and its receiver accepted the
 *   task's final event (the one on the topic), nothing else; a repeat only under the same webhook-id;
 * - every `continuous` subscription accepted every event of its task as a read_committed reader sees them on the
 *   task-events topic, in topic order: 0 lost, 0 unexpected, 0 inversions, a repeat only under the same webhook-id
 *   (order, inversion and "same webhook-id" as defined in test/support/callback-audit.ts).
 * The api and the runner run in this process; the shared test broker stays up. Every wait is bounded; when one
 * passes, the figures are printed and asserted on, so a failure says what was missing.
 */
const CALLBACK_TIMEOUT_MS = 1000;
const TASKS = 48;
const STEPS = 4;
/** Between one task's start and the next: spreads the load over the bridge's lives (a pace, not a proof). */
const SPACING_MS = 600;
// The SIGTERM second: a bridge that leaves the group cleanly is replaced at once, so more stops fall while
// subscriptions are still being made (after a SIGKILL the group waits out the dead member's session, 10 s).
const STOPS: ('SIGKILL' | 'SIGTERM')[] = ['SIGKILL', 'SIGTERM', 'SIGKILL', 'SIGKILL'];
/** Callbacks a bridge must have had accepted since it came up before it is stopped: it is delivering. */
const ACCEPTED_BEFORE_STOP = 5;
const BRIDGE_ENV = {
  KAFKA_TIMEOUT_MS: '3000',
  CALLBACK_TIMEOUT_MS: String(CALLBACK_TIMEOUT_MS),
  CALLBACK_BACKOFF_BASE_MS: '50',
  CALLBACK_BACKOFF_MAX_MS: '500',
  // Retries always succeed (chaosPolicy): nothing may be dead-lettered while the test runs.
  CALLBACK_MAX_ATTEMPTS: '50',
};

type Timing = 'at-once' | 'running' | 'finished' | 'long-after';
const TIMINGS: Timing[] = ['at-once', 'running', 'finished', 'long-after'];
type Mode = 'once' | 'continuous';

/** One task and the one subscription made to it. */
interface Case {
  n: number;
  mode: Mode;
  timing: Timing;
  taskId?: string;
  subscription?: string;
  /** the 201 said the task had already finished: the api's own view when it wrote the subscription */
  afterFinish?: boolean;
  /** a step that failed (a bound passed, an unexpected answer): reported with the figures */
  error?: string;
}

const services: RunningService[] = [];
const bridges: ChildService[] = [];
const receivers: ChaosReceiver[] = [];
const logs: TaskEventLog[] = [];
/** Set in afterAll: a request loop still running then gives up at once instead of retrying. */
let closing = false;

afterAll(async () => {
  closing = true;
  await Promise.all(logs.map((l) => l.stop().catch(() => undefined)));
  await Promise.all(bridges.map((b) => b.kill('SIGKILL')));
  await Promise.all(receivers.map((r) => r.stop()));
  await Promise.all(services.map((s) => s.stop()));
}, 60000);

/** A pause that only spreads timings; nothing is concluded from it. */
const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** A JSON answer, loosely typed: the test reads a few fields of task and subscription representations. */
type Json = Record<string, unknown>;

/**
 * One API request, retried while the api answers 503 or 429 or no answer comes (a busy machine, a slow broker), up
 * to `boundMs`; a POST carries one Idempotency-Key over its retries, so a write that did land is not made twice
 * (and a retry told that key's first try is still in flight retries too).
 */
async function call(base: string, method: string, path: string, want: number, body?: Json, boundMs = 30000) {
  const key = randomUUID();
  const deadline = Date.now() + boundMs;
  for (;;) {
    if (closing) throw new Error(`${method} ${path}: the test is closing`);
    let status = 0;
    let json: Json | undefined;
    let error = '';
    try {
      const res = await fetch(`${base}${path}`, {
        method,
        headers: {
          authorization: `Bearer ${TENANT_A_KEY}`,
          ...(body ? { 'content-type': 'application/json', 'idempotency-key': key } : {}),
        },
        body: body ? JSON.stringify(body) : undefined,
        signal: AbortSignal.timeout(10000),
      });
      status = res.status;
      json = (await res.json().catch(() => undefined)) as Json | undefined;
    } catch (err) {
      error = String(err);
    }
    if (status === want && json) return json;
    // A retry that finds its first try's claim of the key still open (that try timed out here, or answered 503 while
    // its write may have landed) is told 409 in-flight: retry later (README, Idempotency-Key), as a client does.
    const inFlight = status === 409 && json?.type === 'https://hookstream.dev/problems/idempotency-key-in-flight';
    if ((![0, 429, 503].includes(status) && !inFlight) || Date.now() > deadline) {
      throw new Error(`${method} ${path}: ${status} ${error || JSON.stringify(json)}`);
    }
    await pause(200);
  }
}

// jest's bound is above the sum of the bounds inside, so a stall is reported with the figures, not as jest's timeout:
// the services' start 120 s (KAFKA_STARTUP_TIMEOUT_MS), the bridge's 60 s, 4 stops of 30 s waiting, 60 s restarting
// (and 20 s for the SIGTERM), then 45 s and 30 s: 635 s (the cases run beside the stops, 185 s at most).
test('late subscriptions under 3 bridge SIGKILLs and a SIGTERM: every outcome, every event, in order', async () => {
  const began = Date.now();
  const prefix = uniquePrefix('late-sub-kill');
  const env = { KAFKA_TIMEOUT_MS: '3000' };
  const roles = ['api', 'runner'] as const;
  const started = await Promise.all(roles.map((role) => startTestService(prefix, { role, env })));
  services.push(...started);
  const [api] = started;
  const receiver = await new ChaosReceiver(chaosPolicy(CALLBACK_TIMEOUT_MS * 2)).start();
  receivers.push(receiver);
  const log = await new TaskEventLog(testBrokers(), api.kafka.topics.taskEvents).start();
  logs.push(log);
  let bridge = await startChildService('bridge', prefix, BRIDGE_ENV);
  bridges.push(bridge);
  const setUpAt = Date.now();

  const cases: Case[] = Array.from({ length: TASKS }, (_, n) => ({
    n,
    mode: n % 2 === 0 ? 'once' : 'continuous',
    // Every moment gets both modes: n = 0..7 covers the 8 combinations, and so on.
    timing: TIMINGS[Math.floor(n / 2) % TIMINGS.length],
  }));
  const status = async (taskId: string) => String((await call(api.url, 'GET', `/tasks/${taskId}`, 200)).status);
  const finalStatus = (s: string) => ['succeeded', 'failed', 'cancelled'].includes(s);

  const runCase = async (c: Case) => {
    // Spreads the tasks over the test so that subscriptions are made during every bridge's life and between them.
    await pause(c.n * SPACING_MS);
    // Task lengths vary (4 steps of 40-120 ms) so "running" and "at-once" meet tasks at different points.
    const input = { steps: STEPS, stepMs: 40 + (c.n % 5) * 20 };
    const task = await call(api.url, 'POST', '/tasks', 202, { type: 'countdown', input });
    const taskId = String(task.taskId);
    c.taskId = taskId;
    if (c.timing === 'running') {
      // A task may finish between two polls: then it is subscribed to as it finished, which the 201 tells.
      await until(
        async () => ((s) => (s === 'running' || finalStatus(s) ? true : undefined))(await status(taskId)),
        30000,
        20,
        `task ${taskId} running`,
      );
    } else if (c.timing === 'finished' || c.timing === 'long-after') {
      await until(async () => (finalStatus(await status(taskId)) ? true : undefined), 30000, 50, `${taskId} ends`);
    }
    // Spread over 1.5-4 s: the bridge has read (and, if alive, committed) the task's events long before.
    if (c.timing === 'long-after') await pause(1500 + ((c.n * 373) % 2500));
    const callbackUrl = `${receiver.url}/hooks/${c.n}`;
    const sub = await call(api.url, 'POST', '/subscriptions', 201, { callbackUrl, mode: c.mode, taskId });
    c.subscription = String(sub.UUID);
    c.afterFinish = /already finished/.test(String(sub.message));
  };
  const made = () => cases.filter((c) => c.subscription).length;

  // The bridge is stopped at every fifth of the subscriptions made, once it has delivered since it came up.
  const stops: string[] = [];
  let stalled: string | undefined;
  const killer = async () => {
    for (const [i, signal] of STOPS.entries()) {
      const target = Math.ceil(((i + 1) * TASKS) / (STOPS.length + 1));
      const upAt = receiver.acceptedCount;
      stalled = `waiting for ${target} subscriptions and ${ACCEPTED_BEFORE_STOP} callbacks after ${stops.join(',')}`;
      await until(
        async () => (made() >= target && receiver.acceptedCount >= upAt + ACCEPTED_BEFORE_STOP ? true : undefined),
        30000,
        50,
        stalled,
      );
      const exited = bridge.kill(signal);
      // A SIGTERM that does not end the bridge in 20 s is a failure of its own; SIGKILL it then, and say so.
      let escalated = false;
      const timer = setTimeout(() => {
        escalated = true;
        void bridge.kill('SIGKILL');
      }, 20000);
      await exited;
      clearTimeout(timer);
      stops.push(`${signal}${escalated ? '(hung,killed)' : ''}@${made()}subs/${receiver.acceptedCount}cb`);
      stalled = `restarting the bridge after ${stops.join(',')}`;
      bridge = await startChildService('bridge', prefix, BRIDGE_ENV);
      bridges.push(bridge);
    }
    stalled = undefined;
  };
  const [killed] = await Promise.allSettled([
    killer(),
    ...cases.map((c) =>
      runCase(c).catch((err: unknown) => {
        c.error = String(err);
      }),
    ),
  ]);
  if (killed.status === 'rejected') stalled = `${stalled}: ${String(killed.reason)}`;
  const loadedAt = Date.now();

  const subscribed = cases.filter((c): c is Case & { taskId: string; subscription: string } => !!c.subscription);
  const eventsOf = (c: { taskId: string }): LoggedEvent[] => log.byTask.get(c.taskId) ?? [];
  const finalOf = (c: { taskId: string }) => eventsOf(c).filter((e) => FINAL_EVENTS.includes(e.kind));
  // A once subscription is owed its task's final event only; a continuous one every event of its task.
  const audit = (c: Case & { taskId: string; subscription: string }): CallbackAudit =>
    auditSubscription(c.subscription, c.mode === 'once' ? finalOf(c) : eventsOf(c), receiver.deliveries);
  const onceEnded = new Map<string, Json>();
  const onces = subscribed.filter((c) => c.mode === 'once');
  const continuous = subscribed.filter((c) => c.mode === 'continuous');
  // Every task ends; every once subscription is cancelled (by the bridge, after its callback); every continuous one
  // has accepted every event of its task; or the bound passes and the figures say what is missing.
  const complete = await settled(
    async () => {
      // Every round asks after each once subscription not seen ended yet, whatever else is missing: all are counted.
      for (const c of onces.filter((o) => !onceEnded.has(o.subscription))) {
        const s = await call(api.url, 'GET', `/subscriptions/${c.subscription}`, 200, undefined, 5000);
        // The api's view of the history may lag its view of the subscription: ended counts once the delivery shows.
        const deliveredCount = Number((s.counts as Json | undefined)?.delivered ?? 0);
        if (s.status === 'cancelled' && deliveredCount >= 1) onceEnded.set(c.subscription, s);
      }
      if (!subscribed.every((c) => finalsOf(eventsOf(c)) > 0)) return undefined;
      if (!continuous.every((c) => audit(c).lost === 0)) return undefined;
      return onceEnded.size === onces.length ? true : undefined;
    },
    45000,
    250,
  );
  const drainedAt = Date.now();
  await log.catchUp(30000);

  const onceAudits = onces.map(audit);
  const continuousAudits = continuous.map(audit);
  const sum = (audits: CallbackAudit[], f: (a: CallbackAudit) => number) => audits.reduce((n, a) => n + f(a), 0);
  const answered = (s: number) => receiver.deliveries.filter((d) => d.status === s).length;
  const cancelReasons: Record<string, number> = {};
  for (const c of onces) {
    const reason = String(onceEnded.get(c.subscription)?.cancelReason ?? 'not ended with its delivery in the history');
    cancelReasons[reason] = (cancelReasons[reason] ?? 0) + 1;
  }
  const figures = {
    tasks: cases.filter((c) => c.taskId).length,
    subscriptions: subscribed.length,
    onceSubscriptions: onces.length,
    continuousSubscriptions: continuous.length,
    afterFinish: subscribed.filter((c) => c.afterFinish).length,
    beforeFinish: subscribed.filter((c) => !c.afterFinish).length,
    errors: cases.filter((c) => c.error).map((c) => `${c.n}: ${c.error}`),
    stops,
    stalled,
    events: subscribed.reduce((n, c) => n + eventsOf(c).length, 0),
    tasksWithOrderProblems: subscribed.filter((c) => orderProblem(eventsOf(c)) !== undefined).length,
    attempts: receiver.deliveries.length,
    callbacks: receiver.acceptedCount,
    injected: { 500: answered(500), 429: answered(429), hang: answered(503) },
    cancelReasons,
    once: {
      lost: sum(onceAudits, (a) => a.lost),
      unexpected: sum(onceAudits, (a) => a.unexpected),
      duplicates: sum(onceAudits, (a) => a.duplicates),
      splitIds: sum(onceAudits, (a) => a.splitIds),
    },
    continuous: {
      lost: sum(continuousAudits, (a) => a.lost),
      unexpected: sum(continuousAudits, (a) => a.unexpected),
      duplicates: sum(continuousAudits, (a) => a.duplicates),
      splitIds: sum(continuousAudits, (a) => a.splitIds),
      inversions: sum(continuousAudits, (a) => a.inversions),
    },
    // Which moments lost something: the timing and whether the 201 said the task had finished.
    lostBy: subscribed
      .filter((c) => audit(c).lost > 0 || (c.mode === 'once' && !onceEnded.has(c.subscription)))
      .map((c) => `${c.n}:${c.mode}/${c.timing}${c.afterFinish ? '/after' : ''}:${audit(c).lost}`),
    examples: continuous
      .map((c) => audit(c))
      .filter((a) => a.inversions > 0 || a.lost > 0)
      .slice(0, 2)
      .map((a) => `${a.order.join(',')} lost ${a.lostEvents.join(',')}`),
    complete,
    setUpS: (setUpAt - began) / 1000,
    loadS: (loadedAt - setUpAt) / 1000,
    drainS: (drainedAt - loadedAt) / 1000,
  };
  console.log(
    `late-subscription-bridge-kill: ${JSON.stringify(figures)} logs: ${bridges.map((b) => b.logFile).join(' ')}`,
  );

  expect({ stalled: figures.stalled, errors: figures.errors }).toEqual({ stalled: undefined, errors: [] });
  expect(stops.map((s) => s.replace(/@.*/, ''))).toEqual(STOPS);
  expect({ tasks: figures.tasks, subscriptions: figures.subscriptions }).toEqual({
    tasks: TASKS,
    subscriptions: TASKS,
  });
  // Both sides of "late" were met: tasks that had finished when subscribed to, and tasks that had not.
  expect(figures.afterFinish).toBeGreaterThanOrEqual(TASKS / 4);
  expect(figures.beforeFinish).toBeGreaterThanOrEqual(TASKS / 8);
  // Each task: accepted, started, its steps, one final event, in a valid order (a re-run would add events).
  expect(figures.tasksWithOrderProblems).toBe(0);
  expect(figures.events).toBeGreaterThanOrEqual(TASKS * (STEPS + 3));
  // The receiver did fail some attempts, or the retries were not tested.
  expect(figures.injected[500]).toBeGreaterThan(0);
  expect(cancelReasons).toEqual({ 'delivered-once': onces.length });
  const delivered = (c: Case & { subscription: string }) =>
    Number((onceEnded.get(c.subscription)?.counts as Json | undefined)?.delivered ?? 0);
  expect(onces.filter((c) => delivered(c) < 1).map((c) => c.n)).toEqual([]);
  expect(figures.once).toEqual({ lost: 0, unexpected: 0, duplicates: figures.once.duplicates, splitIds: 0 });
  expect(figures.continuous).toEqual({
    lost: 0,
    unexpected: 0,
    duplicates: figures.continuous.duplicates,
    splitIds: 0,
    inversions: 0,
  });
  expect(figures.lostBy).toEqual([]);
  expect(complete).toBe(true);
}, 720000);
