/**
 * The one Apache Kafka version the project runs everywhere: embedded broker,
 * test containers and docker-compose. kafkajs 2.2.4 was checked against it
 * (produce, transactions, consumer groups); see README "Kafka version".
 */
export const KAFKA_VERSION = '4.1.1';
/** Confluent Platform 8.1 ships Apache Kafka 4.1. */
export const CP_KAFKA_IMAGE = 'confluentinc/cp-kafka:8.1.0';
export const APACHE_KAFKA_IMAGE = `apache/kafka:${KAFKA_VERSION}`;
