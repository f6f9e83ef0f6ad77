import type { Kafka } from 'kafkajs';

/**
 * kafkajs's internal cluster factory (kafkajs is pinned, see package.json): how this project reaches what the
 * public API does not offer (a ListOffsets with another isolation level, a coordinator looked up once). It makes
 * clusters with the client's brokers, TLS, SASL and retry settings.
 */
export type ClusterFactory = (options: Record<string, unknown>) => unknown;

const FACTORY = 'private:Kafka:createCluster';

export function clusterFactorySymbol(kafka: Kafka): symbol {
  const factory = Object.getOwnPropertySymbols(kafka).find((s) => s.description === FACTORY);
  const create = factory && (kafka as unknown as Record<symbol, unknown>)[factory];
  if (!factory || typeof create !== 'function') {
    throw new Error('this kafkajs version has no cluster factory: hookstream needs kafkajs 2.2');
  }
  return factory;
}

export function clusterFactory(kafka: Kafka): ClusterFactory {
  const factory = clusterFactorySymbol(kafka);
  const create = (kafka as unknown as Record<symbol, ClusterFactory>)[factory];
  return (options) => create.call(kafka, options);
}
