import { MockAgent, type Agent } from 'undici';
import { DeliveryLane, type LaneDeps } from '../../consumers/callback-bridge/delivery-lanes';
import { LaneStopped } from '../../consumers/callback-bridge/lane-job';
import { createLogger } from '../../src/logger';
import { until } from '../support/until';
import { CANCEL_SETTLE_MS, LEASE_SLACK_MS, SUBSCRIPTIONS_LEASE_MS } from '../../src/subscriptions/subscription-lease';
import type { Subscription } from '../../src/subscriptions/subscription';
import { AttemptRecorder } from '../../consumers/callback-bridge/attempt-recorder';
import { DeliveredCallbacks } from '../../consumers/callback-bridge/delivered-callbacks';
import type { DeliveryAttempt } from '../../src/subscriptions/delivery-attempt';
import { capturedLogger, FakeCommitHolds, FakePublisher, FakeView } from './fakes';
import { SubscriptionStore } from '../../src/subscriptions/subscription-store';

/*
 * The lane's contract without Kafka or sockets: fakes of the project's own
 * ports (publisher, subscriptions view) and undici's MockAgent as the receiver.
 */
const ORIGIN = 'http://receiver.test';
const topics = { deliveries: 'deliveries', callbackDeadLetters: 'dlq', onceCallbacks: 'once-callbacks' };

function subscription(id: string, mode: Subscription['mode'] = 'continuous'): Subscription {
  const now = new Date().toISOString();
  return {
    id,
    tenant: 't',
    callbackUrl: `${ORIGIN}/${id}`,
    mode,
    secret: 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw',
    status: 'active',
    createdAt: now,
    updatedAt: now,
  };
}

function setup(maxAttempts = 5) {
  const agent = new MockAgent();
  agent.disableNetConnect();
  const publisher = new FakePublisher();
  const subscriptions = new FakeView<Subscription>();
  const store = new SubscriptionStore({
    view: subscriptions,
    publisher,
    topic: 'subs',
    cursorTopic: 'backlogs',
    timeoutMs: 1000,
  });
  const deps: LaneDeps = {
    publisher,
    history: new AttemptRecorder(publisher, 0),
    subscriptions: store,
    agent: agent as unknown as Agent,
    logger: createLogger('silent'),
    topics,
    callbacks: { timeoutMs: 1000, maxAttempts, backoffBaseMs: 1, backoffMaxMs: 5, laneBuffer: 1000 },
    kafkaTimeoutMs: 1000,
  };
  return { agent, publisher, subscriptions, deps };
}

/** Answers each POST to `path` with the next status of `statuses` (the last one repeats), recording event order. */
function receiver(agent: MockAgent, path: string, statuses: number[], received: string[]): void {
  let i = 0;
  agent
    .get(ORIGIN)
    .intercept({ path, method: 'POST' })
    .reply((opts) => {
      received.push(JSON.parse(String(opts.body)).event);
      return { statusCode: statuses[Math.min(i++, statuses.length - 1)] };
    })
    .persist();
}

/** The bridge's view applies the subscriptions it writes (their ends) as the real view would. */
function viewAppliesSubscriptionWrites(publisher: FakePublisher, subscriptions: FakeView<Subscription>): void {
  const publish = publisher.publish.bind(publisher);
  publisher.publish = async (records) => {
    const positions = await publish(records);
    for (const r of records) if (r.topic === 'subs') subscriptions.set(r.key, JSON.parse(String(r.value)));
    return positions;
  };
}

const parts = (subscriptionId: string, n: number) => ({
  subscriptionId,
  webhookId: `msg_${n}`,
  event: `e${n}`,
  body: JSON.stringify({ event: `e${n}` }),
});

describe('DeliveryLane', () => {
  test('a failing head is retried in place and the events behind it wait: first receipts stay in order', async () => {
    const { agent, subscriptions, deps, publisher } = setup();
    subscriptions.set('s1', subscription('s1'));
    const received: string[] = [];
    receiver(agent, '/s1', [500, 503, 200], received);
    const lane = new DeliveryLane('s1', deps, { onIdle: () => undefined });
    const signal = new AbortController().signal;
    await Promise.all([1, 2, 3].map((n) => lane.enqueue(parts('s1', n), signal)));
    expect(received).toEqual(['e1', 'e1', 'e1', 'e2', 'e3']);
    const outcomes = publisher.on('deliveries').map((r) => JSON.parse(String(r.value)).outcome);
    expect(outcomes).toEqual(['failed', 'failed', 'delivered', 'delivered', 'delivered']);
  });

  test('after the last attempt the head is dead-lettered and the next event goes', async () => {
    const { agent, subscriptions, deps, publisher } = setup(2);
    subscriptions.set('s1', subscription('s1'));
    const received: string[] = [];
    let calls = 0;
    agent
      .get(ORIGIN)
      .intercept({ path: '/s1', method: 'POST' })
      .reply((opts) => {
        received.push(JSON.parse(String(opts.body)).event);
        return { statusCode: calls++ < 2 ? 500 : 200 };
      })
      .persist();
    const lane = new DeliveryLane('s1', deps, { onIdle: () => undefined });
    const signal = new AbortController().signal;
    await Promise.all([lane.enqueue(parts('s1', 1), signal), lane.enqueue(parts('s1', 2), signal)]);
    expect(received).toEqual(['e1', 'e1', 'e2']);
    expect(publisher.on('dlq').map((r) => JSON.parse(String(r.value)).event)).toEqual(['e1']);
  });

  test('an operator is told: a callback that fails once (info), and one dead-lettered (warn), naming both', async () => {
    const { agent, subscriptions, deps } = setup(3);
    const { logger, lines } = capturedLogger('info');
    subscriptions.set('s1', subscription('s1'));
    receiver(agent, '/s1', [500], []);
    const lane = new DeliveryLane('s1', { ...deps, logger }, { onIdle: () => undefined });
    await lane.enqueue(parts('s1', 1), new AbortController().signal);
    const told = lines.map(({ level, msg, subscriptionId, webhookId, event, attempts }) => ({
      level,
      msg,
      subscriptionId,
      webhookId,
      event,
      attempts,
    }));
    const named = { subscriptionId: 's1', webhookId: 'msg_1', event: 'e1' };
    // One line when it first fails, not one per retry; one when it is parked, with the receiver's last answer.
    expect(told).toEqual([
      { level: 30, msg: 'callback failed; it is retried', ...named, attempts: undefined },
      { level: 40, msg: 'callback dead-lettered after its last attempt', ...named, attempts: 3 },
    ]);
    expect(lines[1].lastError).toMatch(/500/);
  });

  test('a once task subscription whose outcome was dead-lettered ends (dead-lettered); a once event-kind one waits on', async () => {
    // The task's outcome comes once: left active, the subscription waited for nothing, and outlived its history.
    const { agent, subscriptions, deps, publisher } = setup(2);
    viewAppliesSubscriptionWrites(publisher, subscriptions);
    subscriptions.set('task-sub', { ...subscription('task-sub', 'once'), taskId: 'task-1' });
    subscriptions.set('kind-sub', { ...subscription('kind-sub', 'once'), events: ['order.created'] });
    receiver(agent, '/task-sub', [500], []);
    receiver(agent, '/kind-sub', [500], []);
    const signal = new AbortController().signal;
    for (const id of ['task-sub', 'kind-sub']) {
      await new DeliveryLane(id, deps, { onIdle: () => undefined }).enqueue(parts(id, 1), signal);
    }
    expect(subscriptions.get('task-sub')).toMatchObject({ status: 'cancelled', cancelReason: 'dead-lettered' });
    expect(subscriptions.get('kind-sub')).toMatchObject({ status: 'active' });
  });

  test("a dead letter whose body is near Kafka's limit is parked without its body, not retried for ever", async () => {
    const { agent, subscriptions, deps, publisher } = setup(1);
    subscriptions.set('s1', subscription('s1'));
    receiver(agent, '/s1', [500], []);
    const lane = new DeliveryLane('s1', deps, { onIdle: () => undefined });
    const big = { ...parts('s1', 1), body: JSON.stringify({ event: 'e1', data: 'd'.repeat(999_900) }) };
    await lane.enqueue(big, new AbortController().signal);
    const [letter] = publisher.on('dlq').map((r) => JSON.parse(String(r.value)));
    expect(letter).toMatchObject({
      event: 'e1',
      webhookId: 'msg_1',
      attempts: 1,
      bodyOmitted: { bytes: big.body.length },
    });
    expect(letter.body).toBeUndefined();
  });

  test("the dead letter comes after the last attempt's record in the history, though attempt records wait to be batched", async () => {
    const { agent, subscriptions, deps, publisher } = setup(2);
    deps.history = new AttemptRecorder(publisher, 50);
    subscriptions.set('s1', subscription('s1'));
    receiver(agent, '/s1', [500], []);
    const lane = new DeliveryLane('s1', deps, { onIdle: () => undefined });
    await lane.enqueue(parts('s1', 1), new AbortController().signal);
    const history = publisher.on('deliveries').map((r) => JSON.parse(String(r.value)));
    expect(history.map((a) => `${a.attempt}:${a.outcome}`)).toEqual(['1:failed', '2:failed', '2:dead-lettered']);
    // A failed attempt that is tried again says when; the last one, after which there is none, does not.
    const [first, last] = history;
    expect(Date.parse(first.nextAttemptAt) - Date.parse(first.at)).toBeGreaterThanOrEqual(0);
    expect(Date.parse(first.nextAttemptAt) - Date.parse(first.at)).toBeLessThanOrEqual(5 + 50);
    expect(last.nextAttemptAt).toBeUndefined();
    // One handling of the event: its records share a run, and the dead letter has a key of its own.
    const keys = publisher.on('deliveries').map((r) => String(r.key));
    const run = keys[0].split('/')[2];
    expect(keys.map((k) => k.split('/').slice(2).join('/'))).toEqual([`${run}/1`, `${run}/2`, `${run}/dead-lettered`]);
  });

  test("a task event's dead letter names its task in the history, as its attempts do", async () => {
    const { agent, subscriptions, deps, publisher } = setup(1);
    subscriptions.set('s1', subscription('s1'));
    receiver(agent, '/s1', [500], []);
    const lane = new DeliveryLane('s1', deps, { onIdle: () => undefined });
    await lane.enqueue({ ...parts('s1', 1), taskId: 't-7' }, new AbortController().signal);
    const history = publisher.on('deliveries').map((r) => JSON.parse(String(r.value)));
    expect(history.map((a) => [a.outcome, a.taskId])).toEqual([
      ['failed', 't-7'],
      ['dead-lettered', 't-7'],
    ]);
  });

  test('an attempt on the wire when its event is handed back is still recorded, and ends a once subscription', async () => {
    const { agent, subscriptions, deps, publisher } = setup();
    subscriptions.set('s1', subscription('s1', 'once'));
    viewAppliesSubscriptionWrites(publisher, subscriptions);
    const received: string[] = [];
    agent
      .get(ORIGIN)
      .intercept({ path: '/s1', method: 'POST' })
      .reply(() => {
        received.push('e1');
        return { statusCode: 200 };
      })
      .delay(100);
    const lane = new DeliveryLane('s1', deps, { onIdle: () => undefined });
    const handBack = new AbortController();
    const delivered = lane.enqueue(parts('s1', 1), handBack.signal);
    while (received.length === 0) await new Promise((r) => setImmediate(r));
    handBack.abort();
    await delivered.catch(() => undefined);
    expect(publisher.on('deliveries').map((r) => JSON.parse(String(r.value)).outcome)).toEqual(['delivered']);
    // The answer came, whoever owns the event now: the next owner's repeat, turned away, must not lead to a second.
    expect(subscriptions.get('s1')).toMatchObject({ status: 'cancelled', cancelReason: 'delivered-once' });
  });

  test('a callback the history shows delivered or dead-lettered (by an earlier owner) is not sent again', async () => {
    // A bridge that stopped left these events uncommitted behind one still owed: its successor gets them again.
    const { agent, subscriptions, deps, publisher } = setup();
    subscriptions.set('s1', subscription('s1'));
    const history = new FakeView<DeliveryAttempt>();
    const attempt = (n: number, outcome: DeliveryAttempt['outcome'], run = 'r0'): [string, DeliveryAttempt] => [
      `s1/msg_${n}/${run}/1`,
      { subscriptionId: 's1', webhookId: `msg_${n}`, event: `e${n}`, attempt: 1, at: '', outcome, latencyMs: 1 },
    ];
    history.set(...attempt(1, 'delivered'));
    history.set(...attempt(2, 'failed'));
    history.set(...attempt(3, 'dead-lettered'));
    const received: string[] = [];
    receiver(agent, '/s1', [200], received);
    const lane = new DeliveryLane('s1', { ...deps, delivered: new DeliveredCallbacks(history) }, { onIdle: () => {} });
    const signal = new AbortController().signal;
    const exits = await Promise.all([1, 2, 3, 4].map((n) => lane.enqueue(parts('s1', n), signal)));
    expect(exits).toEqual(['done', 'done', 'done', 'done']);
    // Only a failed attempt leaves its callback owed; nothing is written for the ones skipped.
    expect(received).toEqual(['e2', 'e4']);
    expect(publisher.on('deliveries').map((r) => JSON.parse(String(r.value)).event)).toEqual(['e2', 'e4']);
  });

  /*
   * A rebalance hands a callback on the wire to the partition's next owner, whose repeat (same webhook-id) a receiver
   * still answering the first can turn away (409). The first one's answer is recorded by the bridge that sent it.
   */
  describe("an earlier owner's request still open when the callback was taken over", () => {
    const delivered = (sub: string, n: number): [string, DeliveryAttempt] => [
      `${sub}/msg_${n}/old/1`,
      {
        subscriptionId: sub,
        webhookId: `msg_${n}`,
        event: `e${n}`,
        attempt: 1,
        at: '',
        outcome: 'delivered',
        latencyMs: 1,
      },
    ];

    test('accepted meanwhile: the repeat that failed is not retried, and a once subscription ends', async () => {
      const { agent, subscriptions, deps, publisher } = setup(5);
      subscriptions.set('s1', subscription('s1', 'once'));
      viewAppliesSubscriptionWrites(publisher, subscriptions);
      const history = new FakeView<DeliveryAttempt>();
      const received: string[] = [];
      agent
        .get(ORIGIN)
        .intercept({ path: '/s1', method: 'POST' })
        .reply((opts) => {
          received.push(JSON.parse(String(opts.body)).event);
          // The earlier owner's request is answered 200 while this repeat is turned away.
          history.set(...delivered('s1', 1));
          return { statusCode: 409 };
        })
        .persist();
      const lane = new DeliveryLane(
        's1',
        { ...deps, delivered: new DeliveredCallbacks(history) },
        { onIdle: () => {} },
      );
      const signal = new AbortController().signal;
      await Promise.all([lane.enqueue(parts('s1', 1), signal), lane.enqueue(parts('s1', 2), signal)]);
      expect(received).toEqual(['e1']);
      expect(subscriptions.get('s1')).toMatchObject({ status: 'cancelled', cancelReason: 'delivered-once' });
      expect(publisher.on('dlq')).toEqual([]);
    });

    test('a once callback to event kinds is dead-lettered only once such a request must have ended', async () => {
      const { agent, subscriptions, deps, publisher } = setup(2);
      subscriptions.set('s1', subscription('s1', 'once'));
      viewAppliesSubscriptionWrites(publisher, subscriptions);
      const history = new FakeView<DeliveryAttempt>();
      const received: string[] = [];
      receiver(agent, '/s1', [409, 409, 200], received);
      // The partition became this bridge's just now; the earlier owner's answer is recorded after both repeats
      // failed, as its view would read it in a sync.
      const takenOverAt = Date.now();
      history.commitElsewhere(() => history.set(...delivered('s1', 1)));
      const lanesDeps = {
        ...deps,
        callbacks: { ...deps.callbacks, timeoutMs: 300 },
        kafkaTimeoutMs: 200,
        delivered: new DeliveredCallbacks(history),
        ownedSince: (partition: string) => (partition === 'p0' ? takenOverAt : undefined),
      };
      const lane = new DeliveryLane('s1', lanesDeps, { onIdle: () => {} });
      const signal = new AbortController().signal;
      const holds = new FakeCommitHolds();
      const origin = (offset: bigint) => ({ partition: 'p0', offset, holdCommit: holds.holdCommit });
      await Promise.all([
        lane.enqueue(parts('s1', 1), signal, origin(1n)),
        lane.enqueue(parts('s1', 2), signal, origin(2n)),
      ]);
      expect(received).toEqual(['e1', 'e1']);
      expect(history.syncs).toBeGreaterThan(0);
      expect(subscriptions.get('s1')).toMatchObject({ status: 'cancelled', cancelReason: 'delivered-once' });
      expect(publisher.on('dlq')).toEqual([]);
    });
  });

  test('the history index follows the view: a tombstoned attempt no longer counts, a retried write counts once', () => {
    const history = new FakeView<DeliveryAttempt>();
    const delivered = new DeliveredCallbacks(history);
    const a = { subscriptionId: 's1', webhookId: 'msg_9', event: 'e', attempt: 1, at: '', latencyMs: 1 };
    history.set('s1/msg_9/r1/1', { ...a, outcome: 'delivered' });
    history.set('s1/msg_9/r2/1', { ...a, outcome: 'delivered' });
    expect(delivered.outcomeOf('msg_9')).toBe('delivered');
    history.set('s1/msg_9/r1/1', undefined);
    expect(delivered.outcomeOf('msg_9')).toBe('delivered');
    history.set('s1/msg_9/r2/1', { ...a, outcome: 'failed' });
    expect(delivered.outcomeOf('msg_9')).toBeUndefined();
    history.set('s1/msg_9/r3/dead-lettered', { ...a, outcome: 'dead-lettered' });
    expect(delivered.outcomeOf('msg_9')).toBe('dead-lettered');
    expect(delivered.outcomeOf('msg_10')).toBeUndefined();
  });

  test('a once callback an earlier owner did, dying before it ended the subscription, ends it now, unsent', async () => {
    const { agent, subscriptions, deps, publisher } = setup();
    subscriptions.set('s1', subscription('s1', 'once'));
    subscriptions.set('s2', { ...subscription('s2', 'once'), taskId: 't2' });
    subscriptions.set('s3', subscription('s3'));
    // An event-kind once subscription's dead letter ends nothing; an end already written is not written again.
    subscriptions.set('s4', subscription('s4', 'once'));
    subscriptions.set('s5', { ...subscription('s5', 'once'), status: 'cancelled', cancelReason: 'requested' });
    viewAppliesSubscriptionWrites(publisher, subscriptions);
    const history = new FakeView<DeliveryAttempt>();
    const done = (sub: string, outcome: DeliveryAttempt['outcome']): [string, DeliveryAttempt] => [
      `${sub}/msg_1/r0/1`,
      { subscriptionId: sub, webhookId: `msg_1_${sub}`, event: 'e1', attempt: 1, at: '', outcome, latencyMs: 1 },
    ];
    history.set(...done('s1', 'delivered'));
    history.set(...done('s2', 'dead-lettered'));
    history.set(...done('s3', 'delivered'));
    history.set(...done('s4', 'dead-lettered'));
    history.set(...done('s5', 'delivered'));
    const received: string[] = [];
    const all = ['s1', 's2', 's3', 's4', 's5'];
    for (const s of all) receiver(agent, `/${s}`, [200], received);
    const lanesDeps = { ...deps, delivered: new DeliveredCallbacks(history) };
    const signal = new AbortController().signal;
    for (const s of all) {
      const lane = new DeliveryLane(s, lanesDeps, { onIdle: () => undefined });
      await lane.enqueue({ ...parts(s, 1), webhookId: `msg_1_${s}` }, signal);
    }
    expect(received).toEqual([]);
    expect(all.map((s) => subscriptions.get(s)?.cancelReason ?? subscriptions.get(s)?.status)).toEqual([
      'delivered-once',
      'dead-lettered',
      'active',
      'active',
      'requested',
    ]);
    expect(publisher.on('subs').map((r) => r.key)).toEqual(['s1', 's2']);
    // Handed back meanwhile: nothing is written.
    subscriptions.set('s6', subscription('s6', 'once'));
    history.set(...done('s6', 'delivered'));
    const handedBack = new AbortController();
    handedBack.abort();
    const lane = new DeliveryLane('s6', lanesDeps, { onIdle: () => undefined });
    await expect(lane.enqueue({ ...parts('s6', 1), webhookId: 'msg_1_s6' }, handedBack.signal)).rejects.toThrow();
    expect(subscriptions.get('s6')?.status).toBe('active');
  });

  test('a Kafka step that fails (recording the attempt) is retried, not skipped', async () => {
    const { agent, subscriptions, deps, publisher } = setup();
    subscriptions.set('s1', subscription('s1'));
    receiver(agent, '/s1', [200], []);
    publisher.failNext = 2;
    // The first failure is the sync begun ahead of need, the second the one the lane waits for.
    subscriptions.failSyncs = 2;
    const lane = new DeliveryLane('s1', deps, { onIdle: () => undefined });
    await lane.enqueue(parts('s1', 1), new AbortController().signal);
    expect(publisher.on('deliveries')).toHaveLength(1);
    expect(subscriptions.syncs).toBe(3);
  });

  test('a once subscription is ended after its accepted callback; the events behind it are not sent', async () => {
    const { agent, subscriptions, deps, publisher } = setup();
    subscriptions.set('s1', subscription('s1', 'once'));
    const received: string[] = [];
    receiver(agent, '/s1', [200], received);
    viewAppliesSubscriptionWrites(publisher, subscriptions);
    const lane = new DeliveryLane('s1', deps, { onIdle: () => undefined });
    const signal = new AbortController().signal;
    await Promise.all([1, 2].map((n) => lane.enqueue(parts('s1', n), signal)));
    expect(received).toEqual(['e1']);
    expect(subscriptions.get('s1')?.cancelReason).toBe('delivered-once');
  });

  test('handed back (aborted) while waiting: the event is not delivered and its promise says so', async () => {
    const { agent, subscriptions, deps } = setup();
    subscriptions.set('s1', subscription('s1'));
    const received: string[] = [];
    receiver(agent, '/s1', [500], received);
    deps.callbacks.backoffBaseMs = 60000;
    deps.callbacks.backoffMaxMs = 60000;
    const lane = new DeliveryLane('s1', deps, { onIdle: () => undefined });
    const handBack = new AbortController();
    const first = lane.enqueue(parts('s1', 1), handBack.signal);
    const second = lane.enqueue(parts('s1', 2), handBack.signal);
    while (received.length === 0) await new Promise((r) => setImmediate(r));
    handBack.abort();
    await expect(first).rejects.toBeInstanceOf(LaneStopped);
    await expect(second).rejects.toBeInstanceOf(LaneStopped);
    expect(received).toEqual(['e1']);
  });
});

describe('DeliveryLane and the subscriptions lease', () => {
  test('one sync serves a lane for a lease: 50 callbacks in a row do not make 50 syncs', async () => {
    const { agent, subscriptions, deps } = setup();
    subscriptions.set('s1', subscription('s1'));
    const received: string[] = [];
    receiver(agent, '/s1', [200], received);
    const lane = new DeliveryLane('s1', deps, { onIdle: () => undefined });
    const signal = new AbortController().signal;
    const started = Date.now();
    await Promise.all(Array.from({ length: 50 }, (_, n) => lane.enqueue(parts('s1', n), signal)));
    expect(received).toHaveLength(50);
    // At most one sync per half lease (the next is begun early) plus the first.
    const halfLeases = Math.ceil((Date.now() - started) / (SUBSCRIPTIONS_LEASE_MS / 2));
    expect(subscriptions.syncs).toBeLessThanOrEqual(halfLeases + 1);
    expect(subscriptions.syncs).toBeLessThan(50);
  });

  test('a view older than the lease is synced first: a cancellation made elsewhere stops the callback', async () => {
    const { agent, subscriptions, deps } = setup();
    subscriptions.set('s1', subscription('s1'));
    const received: string[] = [];
    receiver(agent, '/s1', [200], received);
    subscriptions.syncedAt = Date.now() - SUBSCRIPTIONS_LEASE_MS - LEASE_SLACK_MS - 1;
    subscriptions.commitElsewhere(() => subscriptions.set('s1', { ...subscription('s1'), status: 'cancelled' }));
    const lane = new DeliveryLane('s1', deps, { onIdle: () => undefined });
    await lane.enqueue(parts('s1', 1), new AbortController().signal);
    expect(subscriptions.syncs).toBeGreaterThanOrEqual(1);
    expect(received).toEqual([]);
  });

  test('handed back during the sync it waited for (a stop, a revocation): nothing is sent', async () => {
    const { agent, subscriptions, deps } = setup();
    subscriptions.set('s1', subscription('s1'));
    const received: string[] = [];
    receiver(agent, '/s1', [200], received);
    subscriptions.syncedAt = Date.now() - SUBSCRIPTIONS_LEASE_MS - LEASE_SLACK_MS - 1;
    const handBack = new AbortController();
    // While the lane awaits the sync's answer, not before it asked.
    subscriptions.commitElsewhere(() => queueMicrotask(() => handBack.abort()));
    const lane = new DeliveryLane('s1', deps, { onIdle: () => undefined });
    await expect(lane.enqueue(parts('s1', 1), handBack.signal)).rejects.toBeInstanceOf(LaneStopped);
    expect(received).toEqual([]);
  });

  test('the lease with its slack is shorter than the time a cancel waits before its 202', () => {
    expect(SUBSCRIPTIONS_LEASE_MS + LEASE_SLACK_MS).toBeLessThan(CANCEL_SETTLE_MS / 2);
  });
});

/** A membership the test grants: it counts the callbacks that came to wait for it. */
class GatedMembership {
  granted = false;
  waits = 0;
  private readonly wakes: (() => void)[] = [];

  held(): boolean {
    return this.granted;
  }

  whenHeld(signal: AbortSignal): Promise<boolean> {
    this.waits += 1;
    return new Promise((resolve) => {
      this.wakes.push(() => resolve(true));
      signal.addEventListener('abort', () => resolve(false));
    });
  }

  grant(): void {
    this.granted = true;
    for (const wake of this.wakes.splice(0)) wake();
  }
}

describe('DeliveryLane and the group membership', () => {
  test('no callback starts while the membership is not held; it goes once it is', async () => {
    const { agent, subscriptions, deps } = setup();
    subscriptions.set('s1', subscription('s1'));
    const received: string[] = [];
    receiver(agent, '/s1', [200], received);
    const membership = new GatedMembership();
    const lane = new DeliveryLane('s1', { ...deps, membership }, { onIdle: () => undefined });
    const delivered = lane.enqueue(parts('s1', 1), new AbortController().signal);
    await until(async () => (membership.waits > 0 ? true : undefined), 5000, 1);
    expect(received).toEqual([]);
    membership.grant();
    await expect(delivered).resolves.toBe('done');
    expect(received).toEqual(['e1']);
  });

  test('handed back while it waits for the membership (the member was dropped): nothing is sent', async () => {
    const { agent, subscriptions, deps } = setup();
    subscriptions.set('s1', subscription('s1'));
    const received: string[] = [];
    receiver(agent, '/s1', [200], received);
    const membership = new GatedMembership();
    const lane = new DeliveryLane('s1', { ...deps, membership }, { onIdle: () => undefined });
    const handBack = new AbortController();
    const first = lane.enqueue(parts('s1', 1), handBack.signal);
    const second = lane.enqueue(parts('s1', 2), handBack.signal);
    await until(async () => (membership.waits > 0 ? true : undefined), 5000, 1);
    handBack.abort();
    await expect(first).rejects.toBeInstanceOf(LaneStopped);
    await expect(second).rejects.toBeInstanceOf(LaneStopped);
    expect(received).toEqual([]);
  });
});
