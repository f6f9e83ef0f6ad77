import type { Kafka, Producer, ProducerConfig } from 'kafkajs';
import { clusterFactory, clusterFactorySymbol } from './kafkajs-cluster-factory';

/** kafkajs's coordinator type for transactions (protocol/coordinatorTypes) */
const TRANSACTION = 1;

interface CoordinatorLookup {
  groupId: string;
  coordinatorType?: number;
}

/** The slice of kafkajs's internal Cluster this module changes. */
interface ClusterWithCoordinators {
  findGroupCoordinator(lookup: CoordinatorLookup): Promise<object>;
}

/**
 * A transactional producer that looks its transaction coordinator up once. kafkajs sends a FindCoordinator before
 * every AddPartitionsToTxn and EndTxn: three of a two-stage transaction's eight round trips, which transactions
 * that run one at a time pay in full. The coordinator is looked up again as soon as a request to it fails (it
 * moved, or its broker went away), so kafkajs's own retry of that request finds the new one; and a publisher
 * replaces its producer, cache and all, after any failed transaction.
 */
export function producerWithCachedCoordinator(kafka: Kafka, config: ProducerConfig): Producer {
  const create = clusterFactory(kafka);
  // The producer is made by kafkajs's own factory method, on an object that differs only in the cluster it makes.
  const derived = Object.create(kafka) as Kafka;
  Object.defineProperty(derived, clusterFactorySymbol(kafka), {
    value: (options: Record<string, unknown>) =>
      cacheTransactionCoordinator(create(options) as ClusterWithCoordinators),
  });
  return kafka.producer.call(derived, config);
}

function cacheTransactionCoordinator<C extends ClusterWithCoordinators>(cluster: C): C {
  const lookUp = cluster.findGroupCoordinator.bind(cluster);
  const found = new Map<string, Promise<object>>();
  cluster.findGroupCoordinator = (lookup) => {
    if (lookup.coordinatorType !== TRANSACTION) return lookUp(lookup);
    let broker = found.get(lookup.groupId);
    if (!broker) {
      const forget = () => {
        if (found.get(lookup.groupId) === broker) found.delete(lookup.groupId);
      };
      broker = lookUp(lookup).then((b) => forgottenOnFailure(b, forget));
      broker.catch(forget);
      found.set(lookup.groupId, broker);
    }
    return broker;
  };
  return cluster;
}

/**
 * Answers that say the coordinator is elsewhere. Others (CONCURRENT_TRANSACTIONS right after a commit) are about
 * the transaction, and kafkajs retries them against the same coordinator.
 */
const MOVED = new Set(['NOT_COORDINATOR', 'COORDINATOR_NOT_AVAILABLE', 'COORDINATOR_LOAD_IN_PROGRESS']);

/** Whether a failed call may mean the coordinator moved: one it answered otherwise, or no answer at all. */
function mayHaveMoved(err: unknown): boolean {
  const e = err as { name?: string; type?: string };
  return e?.name !== 'KafkaJSProtocolError' || MOVED.has(e.type ?? '');
}

/** The broker as it is, except that a call failing in a way that may mean the coordinator moved drops it. */
function forgottenOnFailure<B extends object>(broker: B, forget: () => void): B {
  const failed = (err: unknown) => {
    if (mayHaveMoved(err)) forget();
    throw err;
  };
  return new Proxy(broker, {
    get(target, property) {
      const value: unknown = Reflect.get(target, property, target);
      if (typeof value !== 'function') return value;
      return (...args: unknown[]) => {
        try {
          const result: unknown = value.apply(target, args);
          return result instanceof Promise ? result.catch(failed) : result;
        } catch (err) {
          return failed(err);
        }
      };
    },
  });
}
