/*
 * Event to receipt at an offered rate: events written at `perSecond` for `seconds` while the bridge (and then the
 * plain loop) is running and caught up; the receiver times each from the `sentAt` written into the event.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import type { RunningService } from '../src/service';
import { benchEnv, CountingReceiver, plainLoop, quantile, startRole, subscribe, writeEvents } from './bridge-fixture';

export interface LatencyFigure {
  offeredPerSecond: number;
  events: number;
  bridgeP50Ms: number;
  bridgeP99Ms: number;
  plainLoopP50Ms: number;
  plainLoopP99Ms: number;
}

/** Writes `total` events in ticks of 10 ms, on schedule (a late tick writes what it owes). */
async function offer(api: RunningService, from: number, total: number, perSecond: number): Promise<void> {
  const started = performance.now();
  let written = 0;
  while (written < total) {
    const due = Math.min(total, Math.floor(((performance.now() - started) / 1000) * perSecond) + 1);
    if (due > written) {
      await writeEvents(api, from + written, due - written);
      written = due;
    }
    await sleep(10);
  }
}

export async function bridgeLatency(
  brokers: string[],
  perSecond: number,
  seconds: number,
  key: string,
): Promise<LatencyFigure> {
  const receiver = await new CountingReceiver().start();
  const env = benchEnv(brokers, 'latency', key);
  const api = await startRole(brokers, env, 'api');
  const events = perSecond * seconds;
  try {
    await subscribe(api, key, `${receiver.url}/hook`);
    const bridge = await startRole(brokers, env, 'bridge');
    // Warmed up and caught up: one event through before the clock starts.
    await writeEvents(api, 0, 1);
    await receiver.reached(1);
    receiver.mark();
    await offer(api, 1, events, perSecond);
    await receiver.reached(1 + events);
    const bridgeDelays = [...receiver.delays];
    await bridge.stop();

    const consumer = await plainLoop(brokers, api.kafka.topics.domainEvents, `${receiver.url}/plain`);
    await receiver.reached(2 * (1 + events));
    receiver.mark();
    await offer(api, 1 + events, events, perSecond);
    await receiver.reached(2 * (1 + events) + events);
    const plainDelays = [...receiver.delays];
    await consumer.disconnect();
    return {
      offeredPerSecond: perSecond,
      events,
      bridgeP50Ms: quantile(bridgeDelays, 0.5),
      bridgeP99Ms: quantile(bridgeDelays, 0.99),
      plainLoopP50Ms: quantile(plainDelays, 0.5),
      plainLoopP99Ms: quantile(plainDelays, 0.99),
    };
  } finally {
    await api.stop();
    await receiver.stop();
  }
}
