import { causes, HALF_CONNECTED } from '../kafka/kafka-failure';
import { KafkaUnavailableError } from '../kafka/types';

/*
 * kafkajs errors are told apart by name: only src/kafka/ imports kafkajs, and
 * its error classes are plain names on the error objects anyway.
 */
const NOT_READY_NAMES = new Set([
  'KafkaJSConnectionError',
  'KafkaJSConnectionClosedError',
  'KafkaJSRequestTimeoutError',
  'KafkaJSBrokerNotFound',
  'KafkaJSNoBrokerAvailableError',
  'KafkaJSMetadataNotLoaded',
  'KafkaJSTopicMetadataNotLoaded',
  'KafkaJSStaleTopicMetadataAssignment',
  'KafkaJSGroupCoordinatorNotFound',
  'KafkaJSTimeout',
  'KafkaJSLockTimeout',
]);

/** Protocol errors a broker answers while it, its controller or its coordinators are still starting. */
const NOT_READY_TYPES = new Set([
  'COORDINATOR_NOT_AVAILABLE',
  'COORDINATOR_LOAD_IN_PROGRESS',
  'NOT_COORDINATOR',
  'NOT_COORDINATOR_FOR_GROUP',
  'LEADER_NOT_AVAILABLE',
  'NOT_LEADER_FOR_PARTITION',
  'NOT_LEADER_OR_FOLLOWER',
  'NOT_CONTROLLER',
  'REQUEST_TIMED_OUT',
  'NETWORK_EXCEPTION',
  'UNKNOWN_TOPIC_OR_PARTITION',
  'BROKER_NOT_AVAILABLE',
  'NOT_ENOUGH_REPLICAS',
  'NOT_ENOUGH_REPLICAS_AFTER_APPEND',
  'CONCURRENT_TRANSACTIONS',
  'KAFKA_STORAGE_ERROR',
  'REBALANCE_IN_PROGRESS',
]);

function notReadyItself(err: Error): boolean {
  if (err instanceof KafkaUnavailableError || err.name === 'KafkaUnavailableError' || NOT_READY_NAMES.has(err.name))
    return true;
  // a broker that accepted the connection and did not answer its handshake: stalled, overloaded, still starting
  if (err.message === HALF_CONNECTED) return true;
  const protocol = err as Error & { type?: unknown };
  return err.name.startsWith('KafkaJS') && typeof protocol.type === 'string' && NOT_READY_TYPES.has(protocol.type);
}

/**
 * True when `err` means "Kafka is not (yet) usable": worth another try at
 * start-up. Anything else (bad configuration, a port taken, a bug) is not
 * made better by waiting. kafkajs wraps the error that exhausted its own
 * retries (KafkaJSNumberOfRetriesExceeded), so causes are looked at too.
 */
export function isKafkaNotReady(err: unknown): boolean {
  for (const e of causes(err)) if (notReadyItself(e)) return true;
  return false;
}
