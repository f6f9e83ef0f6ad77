import { setTimeout as sleep } from 'node:timers/promises';
import { KafkaUnavailableError, type Publisher } from '../../src/kafka/types';
import { ResourceStore, type StoredResource } from '../../src/resources/resource-store';
import { FakeView } from './fakes';
import { call, inMemoryApi, type InMemoryApi } from './in-memory-api';

/*
 * Overlapping writes of one resource: each one's read (exists? preconditions? the state a patch merges into) must
 * still hold when its write lands. The publish is slowed so that every request has read before any has written, as
 * a broker's round trip lets them on Kafka.
 */
let api: InMemoryApi;
let restore: () => void;
beforeAll(async () => {
  api = await inMemoryApi();
  const publish = api.kafka.publisher.publish.bind(api.kafka.publisher);
  const slowed = jest.spyOn(api.kafka.publisher, 'publish').mockImplementation(async (records, options) => {
    await sleep(20);
    return publish(records, options);
  });
  restore = () => slowed.mockRestore();
});
afterAll(async () => {
  restore();
  await api.app.close();
});

async function newOrder(): Promise<string> {
  const res = await call(api.app, '/orders', { body: { orderNumber: 1, itemCount: 1, status: 'init' } });
  expect(res.status).toBe(201);
  return res.body.id;
}

const patch = (id: string, body: unknown) => call(api.app, `/orders/${id}`, { method: 'PATCH', body });

test('PATCHes of different fields sent together all take effect: none writes back a state another changed', async () => {
  const id = await newOrder();
  const answers = await Promise.all([
    patch(id, { status: 'shipped' }),
    patch(id, { itemCount: 77 }),
    patch(id, { orderNumber: 555 }),
    patch(id, { author: '/users/u-grace' }),
  ]);
  expect(answers.map((a) => a.status)).toEqual([200, 200, 200, 200]);
  const now = await call(api.app, `/orders/${id}`);
  expect(now.body).toMatchObject({ status: 'shipped', itemCount: 77, orderNumber: 555 });
  expect(now.body._links.author.href).toBe('/users/u-grace');
  // Each answer shows at least its own change: the later ones also those before them.
  expect(answers[3].body).toMatchObject({ status: 'shipped', itemCount: 77, orderNumber: 555 });
});

test('a DELETE answered 204 stays done: a PUT or PATCH sent beside it answers 404 and brings nothing back', async () => {
  for (const method of ['PATCH', 'PUT'] as const) {
    const id = await newOrder();
    const body = { orderNumber: 2, itemCount: 2, status: method };
    const deleted = call(api.app, `/orders/${id}`, { method: 'DELETE' });
    const changes = [1, 2, 3].map(() => call(api.app, `/orders/${id}`, { method, body }));
    expect((await deleted).status).toBe(204);
    expect((await Promise.all(changes)).map((a) => a.status)).toEqual([404, 404, 404]);
    expect((await call(api.app, `/orders/${id}`)).status).toBe(404);
    const events = api.kafka.publisher.on(api.kafka.topics.domainEvents).filter((r) => r.key === `orders/${id}`);
    expect(events.map((r) => JSON.parse(r.value as string).event)).toEqual(['order.created', 'order.deleted']);
  }
});

test('two DELETEs together: one 204 and one order.deleted, the other 404', async () => {
  const id = await newOrder();
  const answers = await Promise.all([1, 2].map(() => call(api.app, `/orders/${id}`, { method: 'DELETE' })));
  expect(answers.map((a) => a.status).sort()).toEqual([204, 404]);
  const events = api.kafka.publisher.on(api.kafka.topics.domainEvents).filter((r) => r.key === `orders/${id}`);
  expect(events).toHaveLength(2);
});

test('a bulk PATCH and a PATCH of the same order together: both changes stay', async () => {
  const [a, b] = [await newOrder(), await newOrder()];
  const bulk = call(api.app, '/orders', {
    method: 'PATCH',
    body: {
      order: [
        { _links: { self: { href: `/orders/${a}` } }, itemCount: 40 },
        { _links: { self: { href: `/orders/${b}` } }, itemCount: 41 },
      ],
    },
  });
  const single = patch(a, { status: 'packed' });
  expect((await bulk).status).toBe(200);
  expect((await single).status).toBe(200);
  expect((await call(api.app, `/orders/${a}`)).body).toMatchObject({ itemCount: 40, status: 'packed' });
  expect((await call(api.app, `/orders/${b}`)).body).toMatchObject({ itemCount: 41 });
});

test('changes of different orders do not wait on each other', async () => {
  const ids = await Promise.all([1, 2, 3, 4].map(() => newOrder()));
  const publishes = api.kafka.publisher.published.length;
  let inFlight = 0;
  let most = 0;
  const spy = jest.spyOn(api.kafka.publisher, 'publish');
  const counting = spy.getMockImplementation();
  spy.mockImplementation(async (records, options) => {
    inFlight += 1;
    most = Math.max(most, inFlight);
    try {
      return await counting!(records, options);
    } finally {
      inFlight -= 1;
    }
  });
  try {
    const answers = await Promise.all(ids.map((id) => patch(id, { itemCount: 9 })));
    expect(answers.map((a) => a.status)).toEqual([200, 200, 200, 200]);
  } finally {
    spy.mockImplementation(counting);
  }
  expect(api.kafka.publisher.published.length).toBeGreaterThan(publishes);
  expect(most).toBe(4);
});

test('a change that waited behind another still answers within the one deadline (KAFKA_TIMEOUT_MS)', async () => {
  // A publisher on a broker that does not answer: each publish fails when the time it was given runs out.
  const given: number[] = [];
  const publisher = {
    publish: (_records: unknown, options?: { timeoutMs?: number }) => {
      given.push(options?.timeoutMs ?? Infinity);
      return new Promise<never>((_, reject) =>
        setTimeout(() => reject(new KafkaUnavailableError('no answer')), options?.timeoutMs),
      );
    },
  } as unknown as Publisher;
  const store = new ResourceStore({
    view: new FakeView<StoredResource>(),
    publisher,
    resourcesTopic: 'resources',
    domainEventsTopic: 'domain-events',
    timeoutMs: 300,
  });
  const change = () =>
    store.changing([{ collection: 'orders', id: 'o-1' }], (deadline) =>
      store.write([{ op: 'delete', collection: 'orders', name: 'order', id: 'o-1' }], { deadline }),
    );
  const outcomes = await Promise.allSettled([change(), change()]);
  expect(outcomes.map((o) => o.status)).toEqual(['rejected', 'rejected']);
  expect(given[0]).toBeGreaterThan(250);
  // The second began with the first, so its deadline had all but passed when its turn came: it answers at once,
  // without a transaction given a few milliseconds (whose failure would mark Kafka down for every write).
  expect(given).toHaveLength(1);
  expect((outcomes[1] as PromiseRejectedResult).reason).toBeInstanceOf(KafkaUnavailableError);
});
