import { KafkaStateView } from '../../src/kafka/state-view';
import { KafkaUnavailableError } from '../../src/kafka/types';
import { createLogger } from '../../src/logger';

/*
 * A view's sync (read-your-writes, an Idempotency-Key replay catching up) asks for the partitions' ends until its
 * deadline. A broker that closes the connection or times out fails that with kafkajs's own error, which carried no
 * problem kind: keyed POSTs answered 500 `internal-error` during a broker SIGSTOP (an audit: 105 in one run of nine).
 * At the deadline a Kafka failure is KafkaUnavailableError, the client's 503; a bug of ours stays what it is (a 500).
 */
function viewWhoseOffsetsFail(failure: () => Error): KafkaStateView<string> {
  const noReading = () => {
    throw new Error('this view never reads');
  };
  return new KafkaStateView<string>(
    noReading,
    'state',
    (v) => v,
    () => Promise.reject(failure()),
    createLogger('silent'),
  );
}

function kafkajsError(name: string, message: string): Error {
  const err = new Error(message);
  err.name = name;
  return err;
}

test.each([
  ['KafkaJSConnectionClosedError', 'Closed connection'],
  ['KafkaJSRequestTimeoutError', 'Request ListOffsets(key: 2, version: 3) timed out'],
])('a sync that meets %s until its deadline fails as Kafka unavailable, with the cause kept', async (name, message) => {
  const view = viewWhoseOffsetsFail(() => kafkajsError(name, message));
  const failed = await view.syncedSince(Date.now(), 300).then(
    () => undefined,
    (err: unknown) => err,
  );
  expect(failed).toBeInstanceOf(KafkaUnavailableError);
  expect((failed as Error).cause).toMatchObject({ name, message });
});

test("a failure that is not Kafka's stays what it is", async () => {
  const view = viewWhoseOffsetsFail(() => new TypeError('a bug'));
  await expect(view.syncedSince(Date.now(), 300)).rejects.toThrow(TypeError);
});
