import { Kafka, logLevel, type Producer, type Transaction } from 'kafkajs';
import { testBrokers } from './test-service';

/** A transaction left open by a writer that died (`producer`: disconnect it when the test is done). */
export interface OpenTransaction {
  producer: Producer;
  transaction: Transaction;
}

/**
 * A transaction left open over every partition of `topic`, as a writer that died leaves it, under the transactional
 * id `transactionalId`, with keys no view cares about (`!zombie-<partition>`, no value). It stays uncommitted until
 * the test ends it, or the coordinator after `transactionTimeout`; every read_committed reader of those partitions
 * stops below it meanwhile.
 */
export async function holdTransactionOpen(
  topic: string,
  transactionalId: string,
  transactionTimeout?: number,
): Promise<OpenTransaction> {
  const kafka = new Kafka({ brokers: testBrokers(), clientId: transactionalId, logLevel: logLevel.NOTHING });
  const producer = kafka.producer({ transactionalId, transactionTimeout, maxInFlightRequests: 1, idempotent: true });
  await producer.connect();
  const transaction = await producer.transaction();
  // Connected and let go here: a client left connected would go on reconnecting in this jest worker, and a later
  // suite that counts its own sockets (service-stop) would find it.
  const admin = kafka.admin();
  await admin.connect();
  const partitions = (await admin.fetchTopicMetadata({ topics: [topic] })).topics[0].partitions;
  await admin.disconnect();
  await transaction.send({
    topic,
    messages: partitions.map((p) => ({ partition: p.partitionId, key: `!zombie-${p.partitionId}`, value: null })),
  });
  return { producer, transaction };
}
