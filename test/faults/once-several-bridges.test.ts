import type { RunningService } from '../../src/service';
import { ChaosReceiver, type ChaosPolicy } from '../support/chaos-receiver';
import { startChildService, type ChildService } from '../support/child-service';
import { untilGroupCommitted, untilGroupStable } from '../support/consumer-group';
import { http } from '../support/http';
import { senderAmong } from '../support/socket-owner';
import { startTestService, uniquePrefix } from '../support/test-service';
import { until } from '../support/until';

/*
 * A `once` subscription to event kinds gets exactly one accepted callback (DESIGN: only-once), also with several
 * bridges. Its events are on every partition of the events topic, each bridge holds some of them, and each would send
 * the first it held before the end of the subscription reached it (three bridges, 30 events at once: three accepted
 * callbacks, before). Each bridge now hands such callbacks on to the subscription's one partition of the once-callbacks
 * topic, whose owner delivers them one at a time. Counted once the bridges' group has committed past every event and
 * every handed-on callback: each was handled, so no later callback can come of them.
 */
const BRIDGES = 3;
const ORDERS = 30;
/** Two attempts, soon after each other: a dead letter in about a second. */
const BRIDGE_ENV = {
  KAFKA_TIMEOUT_MS: '3000',
  CALLBACK_MAX_ATTEMPTS: '2',
  CALLBACK_BACKOFF_BASE_MS: '100',
  CALLBACK_BACKOFF_MAX_MS: '200',
  CALLBACK_TIMEOUT_MS: '10000',
};

const receivers: ChaosReceiver[] = [];
const bridges: ChildService[] = [];
let api: RunningService;
let prefix: string;

beforeAll(async () => {
  prefix = uniquePrefix('once-bridges');
  api = await startTestService(prefix, { role: 'api', env: { KAFKA_TIMEOUT_MS: '3000' } });
  bridges.push(
    ...(await Promise.all(Array.from({ length: BRIDGES }, () => startChildService('bridge', prefix, BRIDGE_ENV)))),
  );
  await untilGroupStable(`${prefix}callback-bridge`, BRIDGES);
}, 180000);

afterAll(async () => {
  await Promise.all(bridges.map((b) => b.kill('SIGKILL')));
  await Promise.all(receivers.map((r) => r.stop()));
  await api?.stop();
}, 60000);

async function receiver(policy?: ChaosPolicy): Promise<ChaosReceiver> {
  // Each callback is put down to the bridge process that sent it, by its connection's port.
  const r = await new ChaosReceiver(policy, senderAmong(bridges)).start();
  receivers.push(r);
  return r;
}

/** A once subscription to order.created, then ORDERS orders in one atomic write: events on every partition at once. */
async function subscribeThenOrder(r: ChaosReceiver): Promise<string> {
  const sub = await http(api.url, '/subscriptions', {
    body: { callbackUrl: `${r.url}/once`, mode: 'once', events: ['order.created'] },
  });
  expect(sub.status).toBe(201);
  const orders = Array.from({ length: ORDERS }, (_, i) => ({ orderNumber: i, itemCount: 1, status: 'open' }));
  expect((await http(api.url, '/orders', { body: { order: orders } })).status).toBe(201);
  return sub.body.UUID as string;
}

/** The subscription once it has ended, and every event and handed-on callback has been handled by the bridges. */
async function ended(id: string): Promise<{ cancelReason: string }> {
  const sub = await until(
    async () => {
      const res = await http(api.url, `/subscriptions/${id}`);
      return res.body?.status === 'cancelled' ? res.body : undefined;
    },
    60000,
    100,
    `subscription ${id} cancelled`,
  );
  const group = `${prefix}callback-bridge`;
  // The events first: each is committed only once the callbacks it handed on are written.
  await untilGroupCommitted(group, api.kafka.topics.domainEvents, 90000);
  await untilGroupCommitted(group, api.kafka.topics.onceCallbacks, 90000);
  return sub;
}

/** The distinct callbacks the subscription's receiver accepted. */
function acceptedIds(r: ChaosReceiver, id: string): string[] {
  return [...new Set(r.deliveries.filter((d) => d.subscription === id && d.accepted).map((d) => d.webhookId))];
}

test('three bridges, 30 matching events at once, three times: one accepted callback each time', async () => {
  const r = await receiver();
  for (let round = 0; round < 3; round += 1) {
    const id = await subscribeThenOrder(r);
    const sub = await ended(id);
    expect(sub.cancelReason).toBe('delivered-once');
    expect(acceptedIds(r, id)).toHaveLength(1);
  }
}, 400000);

test('the first callback dead-lettered is not the accepted one: the next is, and only it', async () => {
  // Every attempt of the first callback fails; every other is accepted.
  const r = await receiver((ordinal) => ({ status: ordinal === 0 ? 500 : 200 }));
  const id = await subscribeThenOrder(r);
  const sub = await ended(id);
  expect(sub.cancelReason).toBe('delivered-once');
  const first = r.deliveries.find((d) => d.subscription === id);
  expect(r.deliveries.filter((d) => d.webhookId === first?.webhookId)).toHaveLength(2);
  const accepted = acceptedIds(r, id);
  expect(accepted).toHaveLength(1);
  expect(accepted).not.toContain(first?.webhookId);
}, 200000);

/*
 * A bridge joining moves partitions (kafkajs gives them all up at a rebalance): the first callback of each
 * subscription, on the wire from its earlier owner, is sent again by the next owner of its partition, and a receiver
 * still handling the first turns the repeat away (409). Before, the next owner dead-lettered it and sent the next event
 * (20 of 20 subscriptions with two accepted callbacks, in an audit): it now reads the history again before a dead
 * letter, once the earlier request must have ended, and the earlier owner ends the subscription after its answer.
 */
test('a bridge joins while first callbacks are on the wire and repeats are turned away (409): one accepted', async () => {
  const r = await receiver((_ordinal, attempt) => (attempt === 1 ? { status: 200, delayMs: 6000 } : { status: 409 }));
  const ids: string[] = [];
  for (let i = 0; i < 3; i += 1) ids.push(await subscribeThenOrder(r));
  await until(
    async () => (ids.every((id) => r.deliveries.some((d) => d.subscription === id)) ? true : undefined),
    60000,
    10,
    'a first callback of each subscription',
  );
  bridges.push(await startChildService('bridge', prefix, BRIDGE_ENV));
  await untilGroupStable(`${prefix}callback-bridge`, bridges.filter((b) => b.running).length);
  for (const id of ids) {
    expect((await ended(id)).cancelReason).toBe('delivered-once');
    expect(acceptedIds(r, id)).toHaveLength(1);
  }
}, 300000);

// Last: it leaves one bridge fewer.
test('the bridge sending it SIGKILLed mid-request: its successor sends that callback again, and no other', async () => {
  // The first request is held past the kill (its answer never reaches the killed bridge); every other is accepted.
  const r = await receiver((ordinal, attempt) =>
    ordinal === 0 && attempt === 1 ? { status: 200, delayMs: 5000 } : { status: 200 },
  );
  const id = await subscribeThenOrder(r);
  const first = await until(async () => r.deliveries.find((d) => d.subscription === id), 60000, 10, 'a first callback');
  const sender = Number(first.sender);
  expect(bridges[sender]).toBeDefined();
  await bridges[sender].kill('SIGKILL');
  const sub = await ended(id);
  expect(sub.cancelReason).toBe('delivered-once');
  expect(acceptedIds(r, id)).toEqual([first.webhookId]);
}, 300000);
