import type { Kafka, Producer, ProducerConfig } from 'kafkajs';
import { TransactionalProducers } from '../../src/kafka/transactional-producers';

/*
 * The turn between transactional ids passes on only for a commit of the producer that holds it. A transaction
 * abandoned at its deadline can commit late, after a reset: its id must keep the turn, so the next transaction
 * initializes that id again (fencing whatever is still open on it) before the other id writes.
 */
interface FakeProducer {
  id: string;
  generation: number;
}

function producers(ids: string[]) {
  const made: FakeProducer[] = [];
  const create = (_kafka: Kafka, config: ProducerConfig) => {
    const fake: FakeProducer = {
      id: config.transactionalId ?? '',
      generation: made.filter((m) => m.id === config.transactionalId).length + 1,
    };
    made.push(fake);
    const producer = {
      connect: async () => undefined,
      disconnect: async () => undefined,
      transaction: async () => ({ abort: async () => undefined }),
      fake,
    };
    return producer as unknown as Producer;
  };
  const turns = new TransactionalProducers({} as Kafka, { transactionalIds: ids, timeoutMs: 1000 }, create);
  const fakeOf = (p: Producer) => (p as unknown as { fake: FakeProducer }).fake;
  return { turns, made, fakeOf };
}

test('a commit passes the turn to the next id, and the ids take turns in order', async () => {
  const { turns, fakeOf } = producers(['a', 'b']);
  const seen: string[] = [];
  for (let i = 0; i < 4; i += 1) {
    const p = await turns.current();
    seen.push(fakeOf(p).id);
    turns.advance(p);
  }
  expect(seen).toEqual(['a', 'b', 'a', 'b']);
  expect(turns.initializations).toBe(2);
});

test('a late commit of a producer replaced by a reset does not pass the turn: its id is initialized again first', async () => {
  const { turns, fakeOf } = producers(['a', 'b']);
  const abandoned = await turns.current();
  turns.reset();
  const next = await turns.current();
  // The abandoned transaction's commit comes back after the reset, while the next one runs on the same id.
  turns.advance(abandoned);
  expect(fakeOf(await turns.current())).toEqual({ id: 'a', generation: 2 });
  expect(fakeOf(next)).toEqual({ id: 'a', generation: 2 });
  turns.advance(next);
  expect(fakeOf(await turns.current()).id).toBe('b');
});

test('with one id the turn never moves, and a reset initializes that id again', async () => {
  const { turns, fakeOf } = producers(['only']);
  const first = await turns.current();
  turns.advance(first);
  expect(await turns.current()).toBe(first);
  turns.reset();
  expect(turns.ready).toBe(false);
  expect(fakeOf(await turns.current())).toEqual({ id: 'only', generation: 2 });
  expect(turns.ready).toBe(true);
});
