import { KafkaJSConnectionError, KafkaJSNumberOfRetriesExceeded, KafkaJSProtocolError } from 'kafkajs';
import { isConnectionFailure, isKafkaFailure } from '../../src/kafka/kafka-failure';

test('a failed connection, wrapped or not, and a half-made one are connection failures; a protocol error is not', () => {
  const refused = new KafkaJSConnectionError('Connection error: connect ECONNREFUSED 127.0.0.1:9092');
  expect(isConnectionFailure(refused)).toBe(true);
  expect(isConnectionFailure(new KafkaJSNumberOfRetriesExceeded(refused, { retryCount: 5, retryTime: 100 }))).toBe(
    true,
  );
  expect(isConnectionFailure(new Error('Broker not connected'))).toBe(true);
  const notLeader = new KafkaJSProtocolError('NOT_LEADER_OR_FOLLOWER');
  expect(isConnectionFailure(notLeader)).toBe(false);
  expect(isKafkaFailure(notLeader)).toBe(true);
});

test('a bug of ours is no Kafka failure: it stays a 500, not a 503', () => {
  const bug = new TypeError("Cannot read properties of undefined (reading 'partitions')");
  expect(isKafkaFailure(bug)).toBe(false);
  expect(isConnectionFailure(bug)).toBe(false);
  expect(isKafkaFailure(undefined)).toBe(false);
});
