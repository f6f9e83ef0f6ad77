import { IdempotencyKeys } from '../../src/idempotency/idempotency-keys';
import { decodeIdempotencyRecord, type IdempotencyRecord } from '../../src/idempotency/idempotency-records';
import {
  KafkaUnavailableError,
  type OutgoingRecord,
  type PublishOptions,
  type Publisher,
  type RecordPosition,
  type WrittenRecord,
} from '../../src/kafka/types';
import { createLogger } from '../../src/logger';
import { decodeTaskRecord, type TaskRecord } from '../../src/tasks/task-snapshot';
import { TaskStore } from '../../src/tasks/task-store';
import type { KeyedCreation } from '../../src/kafka/types';
import { FakeView } from './fakes';

/**
 * The key's answer is written in the creation's own transaction, so no crash
 * or 503 can leave a creation without its key; and a client that got a 503
 * and retries with the same key never gets two tasks. Unit tier: each publish
 * call is one transaction of a recording publisher.
 */
const topics = { taskEvents: 'ev', tasks: 'tasks', taskRequests: 'requests' };
const KEYS_TOPIC = 'keys';

class Transactions implements Publisher {
  readonly committed: OutgoingRecord[][] = [];
  /** the next transaction holding a task request: 'lost' never commits; 'late' commits but its caller gets a 503 */
  nextCreation: 'ok' | 'lost' | 'late' = 'ok';
  private offset = 0;

  constructor(
    private readonly views: Record<string, FakeView<unknown>>,
    private readonly decoders: Record<string, (v: string) => unknown>,
  ) {}

  async publish(records: OutgoingRecord[], _options?: PublishOptions): Promise<WrittenRecord[]> {
    const creation = records.some((r) => r.topic === topics.taskRequests);
    const fate = creation ? this.nextCreation : 'ok';
    if (creation) this.nextCreation = 'ok';
    if (fate === 'lost') throw new KafkaUnavailableError('Kafka did not acknowledge (fake)');
    this.committed.push(records);
    for (const r of records) {
      this.views[r.topic]?.set(r.key, r.value === null ? undefined : this.decoders[r.topic](r.value));
    }
    if (fate === 'late') throw new KafkaUnavailableError('no acknowledgement in time (fake); it committed anyway');
    return records.map((r) => ({
      topic: r.topic,
      partition: 0,
      offset: String(this.offset++),
      key: r.key,
      value: r.value,
    }));
  }

  async publishStaged(
    first: OutgoingRecord[],
    then: (p: RecordPosition[]) => OutgoingRecord[],
    options?: PublishOptions,
  ): Promise<WrittenRecord[]> {
    const positions = first.map((r, i) => ({ topic: r.topic, partition: 0, offset: String(this.offset + i) }));
    return this.publish([...first, ...then(positions)], options);
  }

  tasksCreated(): number {
    return this.committed.flat().filter((r) => r.topic === topics.taskRequests).length;
  }
}

function setup(keyView = new FakeView<IdempotencyRecord>(), timeoutMs = 1000) {
  const taskView = new FakeView<TaskRecord>();
  const publisher = new Transactions(
    { [topics.tasks]: taskView as FakeView<unknown>, [KEYS_TOPIC]: keyView as FakeView<unknown> },
    { [topics.tasks]: decodeTaskRecord, [KEYS_TOPIC]: decodeIdempotencyRecord },
  );
  const keys = new IdempotencyKeys({
    view: keyView,
    publisher,
    topic: KEYS_TOPIC,
    partitionFor: () => 0,
    timeoutMs,
    logger: createLogger('silent'),
  });
  const store = new TaskStore({
    view: taskView,
    publisher: keys.wrap(publisher),
    topics,
    timeoutMs: 1000,
    retentionMs: 60000,
  });
  let n = 0;
  /** POST /tasks as the route runs it: the task id chosen first, the creation under the key. */
  async function post(key: string, input: unknown = { steps: 1 }): Promise<{ kind: string; taskId?: string }> {
    const decision = await keys.begin('acme', key, JSON.stringify(input));
    if (decision.kind === 'replay') return { kind: 'replay', taskId: decision.answer.ids[0] };
    if (decision.kind !== 'new') return { kind: decision.kind };
    const taskId = `task-${(n += 1)}`;
    const submit = (keyed: KeyedCreation) =>
      store.submit({ taskId, tenant: 'acme', type: 'countdown', input, idempotency: keyed });
    const task = await decision.run(() => ({ status: 202, ids: [taskId] }), submit);
    return { kind: 'created', taskId: task.taskId };
  }
  return { publisher, keys, post, keyView };
}

afterEach(() => jest.restoreAllMocks());

test("the creation's transaction holds the task request and the key's answer together", async () => {
  const { publisher, post } = setup();
  const created = await post('k1');
  const creation = publisher.committed.filter((tx) => tx.some((r) => r.topic === topics.taskRequests));
  expect(creation).toHaveLength(1);
  const answers = creation[0]
    .filter((r) => r.topic === KEYS_TOPIC && r.key === 'acme/k1')
    .map((r) => JSON.parse(r.value as string));
  expect(answers).toEqual([expect.objectContaining({ kind: 'done', answer: { status: 202, ids: [created.taskId] } })]);
  expect(await post('k1')).toEqual({ kind: 'replay', taskId: created.taskId });
  expect(publisher.tasksCreated()).toBe(1);
});

test('a 503 whose write committed anyway: the retry gets that task, never a second one', async () => {
  const { publisher, post } = setup();
  publisher.nextCreation = 'late';
  await expect(post('k2')).rejects.toBeInstanceOf(KafkaUnavailableError);
  const retry = await post('k2');
  expect(retry.kind).toBe('replay');
  expect(publisher.tasksCreated()).toBe(1);
});

test('a 503 whose write was lost: the retry is in flight until the claim expires, then creates exactly one task', async () => {
  const { publisher, keys, post } = setup();
  publisher.nextCreation = 'lost';
  await expect(post('k3')).rejects.toBeInstanceOf(KafkaUnavailableError);
  expect(await post('k3')).toEqual({ kind: 'in-flight' });
  const now = Date.now();
  jest.spyOn(Date, 'now').mockReturnValue(now + keys.claimTtlMs);
  const created = await post('k3');
  expect(created.kind).toBe('created');
  expect(await post('k3')).toEqual({ kind: 'replay', taskId: created.taskId });
  expect(publisher.tasksCreated()).toBe(1);
});

test('a keyed request that wrote nothing (it failed before its write) frees its key at once', async () => {
  const { keys } = setup();
  const decision = await keys.begin('acme', 'k4', 'fp');
  if (decision.kind !== 'new') throw new Error(`expected new, got ${decision.kind}`);
  const failing = async () => {
    throw new Error('invalid');
  };
  await expect(decision.run(() => ({ status: 202, ids: [] }), failing)).rejects.toThrow('invalid');
  expect((await keys.begin('acme', 'k4', 'fp')).kind).toBe('new');
});

test('another request under a used key is refused (reused), also while the first is in flight', async () => {
  const { keys, post } = setup();
  await post('k5', { steps: 1 });
  expect(await post('k5', { steps: 2 })).toEqual({ kind: 'reused' });
  const first = await keys.begin('acme', 'k6', 'fp-a');
  expect(first.kind).toBe('new');
  expect((await keys.begin('acme', 'k6', 'fp-a')).kind).toBe('in-flight');
  expect((await keys.begin('acme', 'k6', 'fp-b')).kind).toBe('reused');
});

test("instances with different KAFKA_TIMEOUT_MS time a claim by its writer's: a claim still being written holds", async () => {
  // The writer's claim lives 2 × 30 s + 5 s; the other's own setting (5 s) would give it 15 s.
  const patient = setup(undefined, 30000);
  const hasty = setup(patient.keyView, 5000);
  const writing = await patient.keys.begin('acme', 'k9', 'fp');
  expect(writing.kind).toBe('new');
  const now = Date.now();
  jest.spyOn(Date, 'now').mockReturnValue(now + 16500);
  expect((await hasty.keys.begin('acme', 'k9', 'fp')).kind).toBe('in-flight');
  expect((await hasty.keys.begin('acme', 'k9', 'another')).kind).toBe('reused');
  // Past its own life, the claim holds the key no more, for either.
  jest.spyOn(Date, 'now').mockReturnValue(now + patient.keys.claimTtlMs);
  expect((await hasty.keys.begin('acme', 'k9', 'fp')).kind).toBe('new');
});
