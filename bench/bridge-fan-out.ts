/*
 * The bridge with many subscriptions at once: `subscriptions` continuous subscriptions to `order.created`, each on
 * a receiver path of its own, and `events` queued events, so subscriptions × events deliveries in as many lanes.
 */
import { benchEnv, CountingReceiver, startRole, subscribe, writeEvents } from './bridge-fixture';

export interface FanOutFigure {
  subscriptions: number;
  events: number;
  deliveries: number;
  deliveriesPerSecond: number;
}

export async function bridgeFanOut(
  brokers: string[],
  subscriptions: number,
  events: number,
  key: string,
): Promise<FanOutFigure> {
  const receiver = await new CountingReceiver().start();
  const env = benchEnv(brokers, 'fan-out', key);
  const api = await startRole(brokers, env, 'api');
  try {
    for (let s = 0; s < subscriptions; s += 1) await subscribe(api, key, `${receiver.url}/hook/${s}`);
    await writeEvents(api, 0, events);
  } finally {
    await api.stop();
  }
  const deliveries = subscriptions * events;
  receiver.mark();
  const bridge = await startRole(brokers, env, 'bridge');
  await receiver.reached(deliveries);
  const deliveriesPerSecond = receiver.rate(deliveries);
  await bridge.stop();
  await receiver.stop();
  return { subscriptions, events, deliveries, deliveriesPerSecond };
}
