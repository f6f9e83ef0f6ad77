import { Kafka, logLevel, type Admin } from 'kafkajs';
import type { RunningService } from '../../src/service';
import { auditLoad } from '../support/callback-audit';
import { ChaosReceiver } from '../support/chaos-receiver';
import { startChildService, type ChildService } from '../support/child-service';
import { untilGroupStable } from '../support/consumer-group';
import { senderAmong } from '../support/socket-owner';
import { TaskEventLog } from '../support/task-event-log';
import { TaskLoad } from '../support/task-load';
import { startTestService, testBrokers, uniquePrefix } from '../support/test-service';
import { until } from '../support/until';

/*
 * README "Where a repeat can happen": a bridge that is paused (SIGSTOP here; a VM stall or a long GC does the same)
 * for longer than its group session loses its partitions to the other bridge, which delivers their events from the
 * committed offset on. When it resumes, the callbacks it had queued before the pause are not sent: its membership
 * lapsed, so it hands them back rather than deliver, after later events, what the other bridge already delivered.
 *
 * Two bridges, each its own process, deliver continuous subscriptions to a receiver that holds every answer 40 ms, so
 * every lane has callbacks queued. One bridge is SIGSTOPped while callbacks flow and SIGCONTed once the group is
 * Stable with the other alone (its session expired: the other holds every partition). Each callback is put down to
 * the bridge that sent it (by its connection's port). Counted: 0 lost, 0 inversions, and from the SIGCONT until the
 * paused bridge is seen joining the group again, at most one callback of each subscription from it (the one its lane
 * may have begun as the pause came); without the membership lease it sent what its lanes had queued. The api and the
 * runner run in this process; the shared test broker stays up.
 */
const TASKS = 24;
const STEPS = 40;
/** Callbacks accepted before the pause: both bridges are delivering and their lanes hold queues. */
const ACCEPTED_BEFORE_PAUSE = 150;

const services: RunningService[] = [];
const bridges: ChildService[] = [];
let receiver: ChaosReceiver | undefined;
let log: TaskEventLog | undefined;
let load: TaskLoad | undefined;
let admin: Admin | undefined;

afterAll(async () => {
  for (const b of bridges) if (b.running) b.process.kill('SIGCONT');
  await load?.stop();
  await log?.stop().catch(() => undefined);
  await admin?.disconnect();
  await Promise.all(bridges.map((b) => b.kill('SIGKILL')));
  await receiver?.stop();
  await Promise.all(services.map((s) => s.stop()));
}, 60000);

/** Polls the group until it leaves the state it is Stable in with one member: another member is joining. */
async function untilJoining(admin: Admin, groupId: string): Promise<void> {
  await until(
    async () => {
      const {
        groups: [group],
      } = await admin.describeGroups([groupId]);
      return group.state !== 'Stable' || group.members.length !== 1 ? true : undefined;
    },
    60000,
    20,
    `a member joining ${groupId}`,
  );
}

// jest's bound is above the sum of the bounds inside: the services' start 120 s, the bridges' 120 s, 60 s for the
// callbacks before the pause, 60 s for the group, 120 s for the tasks, 90 s to drain, 30 s for the log: 600 s.
test('a bridge SIGSTOPped past its session resumes without late repeats: 0 lost, 0 inversions', async () => {
  const prefix = uniquePrefix('bridge-pause');
  const env = { KAFKA_TIMEOUT_MS: '3000' };
  services.push(
    ...(await Promise.all((['api', 'runner'] as const).map((role) => startTestService(prefix, { role, env })))),
  );
  const [api] = services;
  // Each callback is put down to the bridge process that sent it, by its connection's port.
  const slow = await new ChaosReceiver(() => ({ status: 200, delayMs: 40 }), senderAmong(bridges)).start();
  receiver = slow;
  const groupId = `${prefix}callback-bridge`;
  bridges.push(await startChildService('bridge', prefix, env));
  bridges.push(await startChildService('bridge', prefix, env));
  await untilGroupStable(groupId, 2);
  const [paused] = bridges;
  const kafkaAdmin = new Kafka({ brokers: testBrokers(), logLevel: logLevel.NOTHING }).admin();
  admin = kafkaAdmin;
  await kafkaAdmin.connect();
  const events = await new TaskEventLog(testBrokers(), api.kafka.topics.taskEvents).start();
  log = events;

  const running = new TaskLoad({
    api: api.url,
    workers: 4,
    paceMs: 50,
    maxAccepted: TASKS,
    body: (n) => ({
      type: 'countdown',
      input: { steps: STEPS, stepMs: 25 },
      mode: 'continuous',
      callbackUrl: `${slow.url}/hooks/${n}`,
    }),
  }).start();
  load = running;
  let stalled: string | undefined;
  let pausedAt = 0;
  /** the receipts from the SIGCONT to the moment the paused bridge was seen joining the group again */
  const resumed = { from: 0, to: 0 };
  try {
    stalled = 'waiting for callbacks before the pause';
    await until(async () => (slow.acceptedCount >= ACCEPTED_BEFORE_PAUSE ? true : undefined), 60000, 10);
    paused.process.kill('SIGSTOP');
    pausedAt = slow.acceptedCount;
    // The other bridge alone in the group: the paused one's session expired and its partitions were handed over.
    stalled = 'waiting for the group to drop the paused bridge';
    await untilGroupStable(groupId, 1);
    paused.process.kill('SIGCONT');
    resumed.from = slow.deliveries.length;
    stalled = 'waiting for the paused bridge to join again';
    await untilJoining(kafkaAdmin, groupId);
    resumed.to = slow.deliveries.length;
    stalled = 'waiting for the tasks to be accepted';
    await until(async () => (running.accepted.length >= TASKS ? true : undefined), 120000);
    stalled = undefined;
  } catch (err) {
    stalled = `${stalled}: ${String(err)}`;
  } finally {
    if (paused.running) paused.process.kill('SIGCONT');
    await running.stop();
  }

  const audit = await auditLoad(running.accepted, events, slow.deliveries, 90000);
  // Sent by the paused bridge after it resumed and before it joined again: at most the one callback each lane had
  // begun when the pause came (a lane sends one at a time). Its queued callbacks are handed back, not sent.
  const stale = new Map<string, number>();
  for (const d of slow.deliveries.slice(resumed.from, resumed.to)) {
    if (d.sender === '0') stale.set(d.subscription, (stale.get(d.subscription) ?? 0) + 1);
  }
  const unnamed = slow.deliveries.slice(resumed.from, resumed.to).filter((d) => d.sender === undefined).length;
  const figures = {
    accepted: running.accepted.length,
    pausedAt,
    stalled,
    complete: audit.complete,
    callbacks: slow.acceptedCount,
    lost: audit.lost,
    duplicates: audit.duplicates,
    inversions: audit.inversions,
    resumed,
    staleSent: [...stale.values()].reduce((n, k) => n + k, 0),
    staleMostInOneLane: Math.max(0, ...stale.values()),
    unnamed,
  };
  console.log(`bridge-pause: ${JSON.stringify(figures)} logs: ${bridges.map((b) => b.logFile).join(' ')}`);

  expect(stalled).toBeUndefined();
  // The pause came while callbacks were still flowing, or it proved nothing.
  expect(pausedAt).toBeLessThan(figures.callbacks);
  // Every callback after the SIGCONT was put down to a bridge, or the count below would prove nothing.
  expect(unnamed).toBe(0);
  expect({ lost: figures.lost, inversions: figures.inversions }).toEqual({ lost: 0, inversions: 0 });
  expect(figures.staleMostInOneLane).toBeLessThanOrEqual(1);
}, 600000);
