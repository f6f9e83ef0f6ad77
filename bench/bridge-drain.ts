/*
 * The callback bridge draining one subscription's backlog, against the
 * plainest correct thing: a kafkajs consumer (read_committed) that POSTs each
 * event with undici and awaits the answer before the next, in order. Both
 * read the same N queued `order.created` events and POST them to the same
 * loopback receiver, which answers 204.
 */
import { benchEnv, CountingReceiver, plainLoop, startRole, subscribe, writeEvents } from './bridge-fixture';

export interface DrainFigure {
  events: number;
  /** events over the time from the first delivery to the last: the drain itself, start-up left out */
  bridgePerSecond: number;
  plainLoopPerSecond: number;
  /** from starting the process (or the consumer) to its first delivery */
  bridgeFirstDeliveryMs: number;
  plainLoopFirstDeliveryMs: number;
}

export async function bridgeDrain(brokers: string[], events: number, key: string): Promise<DrainFigure> {
  const receiver = await new CountingReceiver().start();
  const env = benchEnv(brokers, 'drain', key);
  const api = await startRole(brokers, env, 'api');
  const topic = api.kafka.topics.domainEvents;
  try {
    await subscribe(api, key, `${receiver.url}/hook`);
    await writeEvents(api, 0, events);
  } finally {
    await api.stop();
  }

  let started = receiver.mark();
  const bridge = await startRole(brokers, env, 'bridge');
  await receiver.reached(events);
  const bridgePerSecond = receiver.rate(events);
  const bridgeFirstDeliveryMs = Math.round(receiver.firstAt - started);
  await bridge.stop();

  const before = receiver.count;
  started = receiver.mark();
  const consumer = await plainLoop(brokers, topic, `${receiver.url}/plain`);
  await receiver.reached(before + events);
  const plainLoopPerSecond = receiver.rate(events);
  const plainLoopFirstDeliveryMs = Math.round(receiver.firstAt - started);
  await consumer.disconnect();
  await receiver.stop();
  return { events, bridgePerSecond, plainLoopPerSecond, bridgeFirstDeliveryMs, plainLoopFirstDeliveryMs };
}
