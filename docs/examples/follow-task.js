// Follows one task's events with a plain kafkajs consumer: from the partition
// and offset of its tracking resource, keeping only the task's key, until the
// final event. Usage: node follow-task.js <topic> <partition> <offset> <taskId>
// (KAFKA=host:port, default localhost:9092). Needs `npm install kafkajs`.
const { Kafka, logLevel } = require('kafkajs');

const [topic, partition, offset, taskId] = process.argv.slice(2);
const FINAL = ['task.succeeded', 'task.failed', 'task.cancelled'];

async function main() {
  const kafka = new Kafka({ brokers: [process.env.KAFKA || 'localhost:9092'], logLevel: logLevel.NOTHING });
  const consumer = kafka.consumer({ groupId: `follow-${taskId}-${Date.now()}` });
  await consumer.connect();
  await consumer.subscribe({ topic });
  let done;
  const finished = new Promise((resolve) => {
    done = resolve;
  });
  // Nothing committed: an empty group with no offsets is dropped at the broker's next clean-up
  // (offsets.retention.check.interval.ms, 10 min), not kept for the 7 days of committed offsets.
  await consumer.run({
    autoCommit: false,
    eachMessage: async ({ partition: p, message }) => {
      if (p !== Number(partition) || message.key.toString() !== taskId) return;
      const event = JSON.parse(message.value.toString());
      console.log(`${message.offset} ${event.event} ${JSON.stringify(event.data)}`);
      if (FINAL.includes(event.event)) done();
    },
  });
  consumer.seek({ topic, partition: Number(partition), offset });
  await finished;
  await consumer.disconnect();
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
