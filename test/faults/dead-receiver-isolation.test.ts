import { randomUUID } from 'node:crypto';
import { Kafka, logLevel } from 'kafkajs';
import type { RunningService } from '../../src/service';
import { auditSubscription, type CallbackAudit } from '../support/callback-audit';
import { ChaosReceiver, type ChaosReply, type Delivery } from '../support/chaos-receiver';
import { startChildService, type ChildService } from '../support/child-service';
import { readTaskEvents } from '../support/event-reader';
import { http, type HttpResult } from '../support/http';
import { settled } from '../support/settled';
import { startTestService, testBrokers, uniquePrefix } from '../support/test-service';
import { committedRecords } from '../support/topic-contents';

/*
 * DESIGN.md: "One slow or dead endpoint never delays others; one subscription receives a task's events in order."
 * Two continuous subscriptions to order.created: D's endpoint is dead (every attempt answered 503 at once, every
 * third one held past the callback timeout and never accepted), H's answers 204. Then five times the bridge's
 * budget (CALLBACK_CONCURRENCY) of orders are written. A bridge that holds a dead lane's backlog in its shared
 * budget stops fetching once D's events fill it, and H (and every other subscription) waits with it: the README's
 * "Known limit", which a per-subscription budget (CALLBACK_LANE_BUFFER) is to lift. So, while D is still dead:
 * - H accepts every order's event, within a bound;
 * - a task submitted afterwards with a callbackUrl to the healthy receiver calls back every one of its events;
 * - the bridge is SIGKILLed and a new one started (D's whole backlog is still uncommitted, so the new bridge reads
 *   it all again), more orders are written, and H accepts those too.
 * Then D's endpoint comes back: D accepts every event, each partition's events in offset order.
 *
 * An order's callback is known by its orderNumber (unique here; the callback's data is the order's data), and an
 * event's partition and offset are read from the domain-events topic as a user's read_committed consumer would.
 * An inversion: in the order of first accepted receipt (a repeat of an order already accepted is a duplicate,
 * not a new position), an event whose offset is below that of an event of its partition accepted before it.
 * Duplicates are allowed (at least once) but only under one webhook-id per event. D's head must not be
 * dead-lettered while the test runs (that would lose an event by design), so CALLBACK_MAX_ATTEMPTS is the most
 * the configuration allows and the backoff long enough that 100 attempts outlast each bridge; the dead-letter
 * topic is checked to be empty. The api and the runner run in this process; the bridge is its own process so it
 * can be killed. Each wait has a bound and, when it passes, the figures are printed and asserted on.
 */
const CALLBACK_TIMEOUT_MS = 1000;
const CONCURRENCY = 200;
const BRIDGE_ENV = {
  KAFKA_TIMEOUT_MS: '3000',
  CALLBACK_CONCURRENCY: String(CONCURRENCY),
  CALLBACK_LANE_BUFFER: '20',
  CALLBACK_TIMEOUT_MS: String(CALLBACK_TIMEOUT_MS),
  CALLBACK_BACKOFF_BASE_MS: '100',
  // From the 6th attempt a failure waits 1 to 2 s: 100 attempts of a dead head take well over 2 minutes.
  CALLBACK_BACKOFF_MAX_MS: '2000',
  // The most src/config.ts accepts.
  CALLBACK_MAX_ATTEMPTS: '100',
};
/** Five times the bridge's budget: on their own, D's events would fill it. */
const ORDERS = 1000;
/** Written after the restart. */
const LATER_ORDERS = 300;
const BULK = 100;
const STEPS = 5;
/** How long H may take to accept every order while D is dead (either time). */
const H_BOUND_MS = 60000;

interface OrderEvent {
  partition: number;
  offset: number;
  orderNumber: number;
}

interface OrderAudit {
  /** orders never accepted */
  lost: number;
  /** accepted callbacks of the subscription that name no order of this test */
  unexpected: number;
  /** accepted receipts of an order already accepted before */
  duplicates: number;
  /** orders accepted under more than one webhook-id */
  splitIds: number;
  /** webhook-ids accepted for more than one order */
  sharedIds: number;
  inversions: number;
  /** the first inversions, as `partition:offset after partition:offset` */
  examples: string[];
}

const services: RunningService[] = [];
const bridges: ChildService[] = [];
const receivers: ChaosReceiver[] = [];

afterAll(async () => {
  await Promise.all(bridges.map((b) => b.kill('SIGKILL')));
  await Promise.all(receivers.map((r) => r.stop()));
  await Promise.all(services.map((s) => s.stop()));
}, 60000);

/** A creating POST, repeated under the same Idempotency-Key while the api answers 503 or 409 (nothing is doubled). */
async function create(api: string, path: string, body: unknown): Promise<HttpResult> {
  const headers = { 'idempotency-key': `"${randomUUID()}"` };
  for (let tries = 1; ; tries += 1) {
    const res = await http(api, path, { body, headers });
    if (![503, 409].includes(res.status) || tries === 5) return res;
    await new Promise((r) => setTimeout(r, 500));
  }
}

/** Writes orders numbered from..to-1, in bulk requests of BULK. */
async function writeOrders(api: string, from: number, to: number): Promise<void> {
  for (let start = from; start < to; start += BULK) {
    const order = [];
    for (let n = start; n < Math.min(to, start + BULK); n++)
      order.push({ orderNumber: n, itemCount: 1, status: 'open' });
    const res = await create(api, '/orders', { order });
    if (res.status !== 201) throw new Error(`POST /orders (${start}..) answered ${res.status}: ${res.text}`);
  }
}

/** The distinct orders a subscription's endpoint accepted (2xx) so far. */
function acceptedOrders(receiver: ChaosReceiver, subscription: string): Set<number> {
  const orders = new Set<number>();
  for (const d of receiver.deliveries) {
    if (d.accepted && d.subscription === subscription) orders.add(Number(d.data.orderNumber));
  }
  return orders;
}

/** The order.created events of orders numbered below `count`, read committed from the start; fails after the bound. */
async function orderEvents(topic: string, count: number, timeoutMs = 30000): Promise<Map<number, OrderEvent>> {
  const kafka = new Kafka({ clientId: 'dead-receiver-reader', brokers: testBrokers(), logLevel: logLevel.NOTHING });
  const consumer = kafka.consumer({ groupId: `test-read-${randomUUID()}`, readUncommitted: false });
  const events = new Map<number, OrderEvent>();
  await consumer.connect();
  try {
    await consumer.subscribe({ topic, fromBeginning: true });
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(
        () =>
          reject(new Error(`${events.size} of ${count} order.created events read from ${topic} in ${timeoutMs} ms`)),
        timeoutMs,
      );
      void consumer.run({
        eachMessage: async ({ partition, message }) => {
          const value = JSON.parse(message.value?.toString() ?? 'null');
          const orderNumber = Number(value?.data?.orderNumber);
          if (value?.event !== 'order.created' || !(orderNumber >= 0 && orderNumber < count)) return;
          events.set(orderNumber, { partition, offset: Number(message.offset), orderNumber });
          if (events.size === count) {
            clearTimeout(timer);
            resolve();
          }
        },
      });
    });
  } finally {
    await consumer.disconnect();
  }
  return events;
}

/** One order subscription's accepted callbacks against the order events it should have had (see the header). */
function auditOrders(subscription: string, events: Map<number, OrderEvent>, deliveries: Delivery[]): OrderAudit {
  const accepted = deliveries
    .filter((d) => d.subscription === subscription && d.accepted)
    .sort((a, b) => a.seq - b.seq);
  const idsOf = new Map<number, Set<string>>();
  const ordersOf = new Map<string, Set<number>>();
  const highest = new Map<number, OrderEvent>();
  const examples: string[] = [];
  let unexpected = 0;
  let duplicates = 0;
  let inversions = 0;
  for (const d of accepted) {
    const e = events.get(Number(d.data.orderNumber));
    if (d.event !== 'order.created' || !e) {
      unexpected += 1;
      continue;
    }
    ordersOf.set(d.webhookId, (ordersOf.get(d.webhookId) ?? new Set()).add(e.orderNumber));
    const ids = idsOf.get(e.orderNumber);
    if (ids) {
      ids.add(d.webhookId);
      duplicates += 1;
      continue;
    }
    idsOf.set(e.orderNumber, new Set([d.webhookId]));
    const top = highest.get(e.partition);
    if (top && e.offset < top.offset) {
      inversions += 1;
      if (examples.length < 3) examples.push(`${e.partition}:${e.offset} after ${top.partition}:${top.offset}`);
    } else {
      highest.set(e.partition, e);
    }
  }
  return {
    lost: [...events.keys()].filter((n) => !idsOf.has(n)).length,
    unexpected,
    duplicates,
    splitIds: [...idsOf.values()].filter((ids) => ids.size > 1).length,
    sharedIds: [...ordersOf.values()].filter((orders) => orders.size > 1).length,
    inversions,
    examples,
  };
}

// jest's bound is above the sum of the bounds inside, so a stall is reported with the figures, not as jest's timeout:
// the services' start 120 s (KAFKA_STARTUP_TIMEOUT_MS), 2 bridge starts of 60 s, H 60 s twice, the task's events 30 s
// and its callbacks 30 s, D 90 s, the order events 30 s: 540 s, and 16 writes, each answered within KAFKA_TIMEOUT_MS.
test(`a dead endpoint with ${ORDERS + LATER_ORDERS} events for it delays no other subscription, across a bridge crash; revived, it gets every event in partition order`, async () => {
  const began = Date.now();
  const seconds = (from: number) => (Date.now() - from) / 1000;
  const prefix = uniquePrefix('dead-receiver');
  const roles = ['api', 'runner'] as const;
  const started = await Promise.all(roles.map((role) => startTestService(prefix, { role })));
  services.push(...started);
  const [api] = started;

  // D's endpoint: dead until revived. Every third attempt of a callback hangs past the callback timeout.
  let dead = true;
  const dying = { answered503: 0, hung: 0 };
  const deadReceiver = await new ChaosReceiver((_ordinal, attempt): ChaosReply => {
    if (!dead) return { status: 204 };
    if (attempt % 3 === 0) {
      dying.hung += 1;
      return { status: 503, delayMs: CALLBACK_TIMEOUT_MS * 3 };
    }
    dying.answered503 += 1;
    return { status: 503 };
  }).start();
  const healthy = await new ChaosReceiver(() => ({ status: 204 })).start();
  receivers.push(deadReceiver, healthy);
  bridges.push(await startChildService('bridge', prefix, BRIDGE_ENV));

  const subscribe = async (url: string) => {
    const res = await create(api.url, '/subscriptions', {
      callbackUrl: url,
      mode: 'continuous',
      events: ['order.created'],
    });
    if (res.status !== 201) throw new Error(`POST /subscriptions answered ${res.status}: ${res.text}`);
    return res.body.UUID as string;
  };
  const d = await subscribe(`${deadReceiver.url}/dead`);
  const h = await subscribe(`${healthy.url}/healthy`);

  const phases: Record<string, number> = {};
  // A phase that does not finish within its bound is reported with the counts; the later phases are skipped.
  let stalled: string | undefined;
  let written = 0;
  const writeStarted = Date.now();
  await writeOrders(api.url, 0, ORDERS);
  written = ORDERS;
  phases.writeOrdersS = seconds(writeStarted);

  // 1. H accepts every order while D is dead.
  const isolationStarted = Date.now();
  const isolated = await settled(
    async () => (acceptedOrders(healthy, h).size >= ORDERS ? true : undefined),
    H_BOUND_MS,
  );
  phases.hAllOrdersS = seconds(isolationStarted);
  const isolation = {
    hAccepted: acceptedOrders(healthy, h).size,
    dAttempts: deadReceiver.deliveries.length,
    dAccepted: acceptedOrders(deadReceiver, d).size,
  };
  if (!isolated) {
    stalled = `H accepted ${isolation.hAccepted} of ${ORDERS} orders in ${H_BOUND_MS / 1000} s while D was dead`;
  }

  // 2. A task submitted after the backlog calls back every one of its events while D is dead.
  let taskSub = '';
  let taskAudit: CallbackAudit | undefined;
  let taskEvents = 0;
  if (!stalled) {
    const taskStarted = Date.now();
    const res = await create(api.url, '/tasks', {
      type: 'countdown',
      input: { steps: STEPS, stepMs: 20 },
      mode: 'continuous',
      callbackUrl: `${healthy.url}/task`,
    });
    if (res.status !== 202) throw new Error(`POST /tasks answered ${res.status}: ${res.text}`);
    taskSub = res.body._embedded.subscription.UUID;
    const taskId = res.body.taskId as string;
    const logged = (await readTaskEvents(testBrokers(), { topic: api.kafka.topics.taskEvents, key: taskId })).map(
      (e) => ({
        partition: e.partition,
        offset: Number(e.offset),
        id: e.headers.ce_id,
        kind: e.value.event,
        attempt: e.value.attempt,
        data: e.value.data ?? {},
      }),
    );
    taskEvents = logged.length;
    const audit = () => auditSubscription(taskSub, logged, healthy.deliveries);
    const done = await settled(async () => (audit().lost === 0 ? true : undefined), 30000);
    taskAudit = audit();
    phases.taskS = seconds(taskStarted);
    if (!done) stalled = `the task's subscription lacked ${taskAudit.lost} of ${taskEvents} events after 30 s`;
  }

  // 3. SIGKILL the bridge while D is dead, start another, write more orders: H accepts them all.
  let killedExit: number | null | undefined;
  if (!stalled) {
    const restartStarted = Date.now();
    killedExit = await bridges[0].kill('SIGKILL');
    bridges.push(await startChildService('bridge', prefix, BRIDGE_ENV));
    await writeOrders(api.url, ORDERS, ORDERS + LATER_ORDERS);
    written = ORDERS + LATER_ORDERS;
    const all = written;
    const done = await settled(async () => (acceptedOrders(healthy, h).size >= all ? true : undefined), H_BOUND_MS);
    phases.restartS = seconds(restartStarted);
    if (!done) {
      stalled = `after the restart H accepted ${acceptedOrders(healthy, h).size} of ${all} orders in ${H_BOUND_MS / 1000} s`;
    }
  }

  // 4. D comes back and gets every event.
  const whileDead = {
    dAccepted: acceptedOrders(deadReceiver, d).size,
    dAttempts: deadReceiver.deliveries.length,
    ...dying,
  };
  // Not revived after a stall: the audits below then show the stalled state, not what came after it.
  if (!stalled) {
    dead = false;
    const reviveStarted = Date.now();
    const all = ORDERS + LATER_ORDERS;
    const done = await settled(async () => (acceptedOrders(deadReceiver, d).size >= all ? true : undefined), 90000);
    phases.dAllOrdersS = seconds(reviveStarted);
    if (!done) stalled = `revived, D accepted ${acceptedOrders(deadReceiver, d).size} of ${all} orders in 90 s`;
  }

  const events = await orderEvents(api.kafka.topics.domainEvents, written);
  const deadLetters = (await committedRecords(testBrokers(), api.kafka.topics.callbackDeadLetters)).length;
  const figures = {
    stalled,
    written,
    isolation,
    whileDead,
    killedExit,
    taskEvents,
    task: taskAudit && {
      lost: taskAudit.lost,
      unexpected: taskAudit.unexpected,
      duplicates: taskAudit.duplicates,
      splitIds: taskAudit.splitIds,
      inversions: taskAudit.inversions,
    },
    h: auditOrders(h, events, healthy.deliveries),
    d: auditOrders(d, events, deadReceiver.deliveries),
    healthyAttempts: healthy.deliveries.length,
    deadLetters,
    partitions: new Set([...events.values()].map((e) => e.partition)).size,
    phases,
    totalS: seconds(began),
  };
  console.log(`dead-receiver-isolation: ${JSON.stringify(figures)} logs: ${bridges.map((b) => b.logFile).join(' ')}`);

  // The proof: H had every order while D was dead, within the bound.
  expect({ hAcceptedWhileDDead: isolation.hAccepted, stalled }).toEqual({
    hAcceptedWhileDDead: ORDERS,
    stalled: undefined,
  });
  // D really was dead, and really was tried, both ways, all the while.
  expect(whileDead.dAccepted).toBe(0);
  expect(whileDead.answered503).toBeGreaterThan(0);
  expect(whileDead.hung).toBeGreaterThan(0);
  // More than one partition, or order per partition would be order over the topic.
  expect(figures.partitions).toBeGreaterThan(1);
  expect(killedExit).toBeNull();
  expect(taskEvents).toBeGreaterThanOrEqual(STEPS + 3);
  expect(figures.task).toEqual({
    lost: 0,
    unexpected: 0,
    duplicates: expect.any(Number),
    splitIds: 0,
    inversions: 0,
  });
  const guarantees = (a: OrderAudit) => ({
    lost: a.lost,
    unexpected: a.unexpected,
    splitIds: a.splitIds,
    sharedIds: a.sharedIds,
    inversions: a.inversions,
  });
  const none = { lost: 0, unexpected: 0, splitIds: 0, sharedIds: 0, inversions: 0 };
  expect({ h: guarantees(figures.h), d: guarantees(figures.d) }).toEqual({ h: none, d: none });
  expect(deadLetters).toBe(0);
}, 720000);
