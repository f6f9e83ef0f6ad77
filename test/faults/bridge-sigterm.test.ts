import { readFileSync } from 'node:fs';
import type { RunningService } from '../../src/service';
import { auditLoad } from '../support/callback-audit';
import { ChaosReceiver } from '../support/chaos-receiver';
import { startChildService, type ChildService } from '../support/child-service';
import { TaskEventLog } from '../support/task-event-log';
import { TaskLoad } from '../support/task-load';
import { startTestService, testBrokers, uniquePrefix } from '../support/test-service';
import { until } from '../support/until';

/*
 * A bridge stopped gracefully (SIGTERM) while callbacks flow to a receiver that accepts every one: the callbacks under
 * way finish and their events are committed before it leaves, so its successor repeats none of them. Only a crash
 * repeats callbacks (README "Where a repeat can happen"). The api and the runner run in this process; the bridge is
 * its own process. The shared test broker stays up.
 *
 * On a machine too busy to finish within the stop's grace (5 s), what is left is handed back (the bridge says so at
 * info). The commit cannot pass an event still owed, so events delivered at later offsets of the same partition come
 * back to the successor as well; it reads the delivery history before it takes the partition over and sends none of
 * those again. Only a handed-back event's own callback (on the wire, or its attempt not yet written) can repeat: one
 * subscription per task here, so at most one repeat per handed-back record. Without the history, stops that handed
 * back 6 and 89 records under `stress-ng --cpu 4` repeated 158 and 383 callbacks; with it, 27-168 handed back, 0.
 */
const TASKS = 100;
const STEPS = 12;
const STOPS = 3;
/** Callbacks accepted between one bridge coming up and its SIGTERM. */
const ACCEPTED_BETWEEN_STOPS = 60;

/** Records a stopping bridge handed back because its grace ran out, from its info log line. */
function handedBack(logFile: string): number {
  const said = /"records":(\d+)[^\n]*records still running were handed back/.exec(readFileSync(logFile, 'utf8'));
  return said ? Number(said[1]) : 0;
}

const services: RunningService[] = [];
const bridges: ChildService[] = [];
let receiver: ChaosReceiver | undefined;
let log: TaskEventLog | undefined;
let load: TaskLoad | undefined;

afterAll(async () => {
  await load?.stop();
  await log?.stop().catch(() => undefined);
  await Promise.all(bridges.map((b) => b.kill('SIGKILL')));
  await receiver?.stop();
  await Promise.all(services.map((s) => s.stop()));
}, 60000);

// jest's bound is above the sum of the bounds inside: the services' start 120 s, each stop 60 s waiting and 60 s
// starting a bridge (3: 360 s), 120 s for the tasks, 60 s to drain, 30 s for the log: 690 s.
test('a bridge SIGTERMed 3 times under callback load: 0 lost, in order, repeats only of events handed back', async () => {
  const prefix = uniquePrefix('bridge-sigterm');
  const env = { KAFKA_TIMEOUT_MS: '3000' };
  services.push(
    ...(await Promise.all((['api', 'runner'] as const).map((role) => startTestService(prefix, { role, env })))),
  );
  const [api] = services;
  const accepting = await new ChaosReceiver().start();
  receiver = accepting;
  // At info, a stop says how many records it handed back.
  const startBridge = async () =>
    bridges.push(await startChildService('bridge', prefix, { ...env, LOG_LEVEL: 'info' }));
  await startBridge();
  const events = await new TaskEventLog(testBrokers(), api.kafka.topics.taskEvents).start();
  log = events;

  const running = new TaskLoad({
    api: api.url,
    workers: 2,
    paceMs: 300,
    maxAccepted: TASKS,
    body: (n) => ({
      type: 'countdown',
      input: { steps: STEPS, stepMs: 40 },
      mode: 'continuous',
      callbackUrl: `${accepting.url}/hooks/${n}`,
    }),
  }).start();
  load = running;
  const stops: number[] = [];
  let stalled: string | undefined;
  try {
    for (let i = 0; i < STOPS; i++) {
      const at = accepting.acceptedCount + ACCEPTED_BETWEEN_STOPS;
      stalled = `waiting for ${at} callbacks after ${stops.length} stops`;
      await until(async () => (accepting.acceptedCount >= at ? true : undefined), 60000, 20);
      // Counted as the signal goes: a busy stopping bridge may deliver all it holds before it exits.
      stops.push(accepting.acceptedCount);
      await bridges.filter((b) => b.running)[0].kill('SIGTERM');
      await startBridge();
    }
    stalled = 'waiting for the tasks to be accepted';
    await until(async () => (running.accepted.length >= TASKS ? true : undefined), 120000);
    stalled = undefined;
  } catch (err) {
    stalled = `${stalled}: ${String(err)}`;
  } finally {
    await running.stop();
  }

  const audit = await auditLoad(running.accepted, events, accepting.deliveries, 60000);
  const figures = {
    accepted: running.accepted.length,
    stops,
    stalled,
    complete: audit.complete,
    callbacks: accepting.acceptedCount,
    lost: audit.lost,
    duplicates: audit.duplicates,
    inversions: audit.inversions,
    handedBack: bridges.map((b) => handedBack(b.logFile)),
  };
  console.log(`bridge-sigterm: ${JSON.stringify(figures)} logs: ${bridges.map((b) => b.logFile).join(' ')}`);

  expect(stalled).toBeUndefined();
  expect(stops).toHaveLength(STOPS);
  // Every stop came while callbacks were still flowing, or it proved nothing.
  expect(Math.max(...stops)).toBeLessThan(figures.callbacks);
  expect({ lost: figures.lost, inversions: figures.inversions }).toEqual({ lost: 0, inversions: 0 });
  // No repeat from a stop whose callbacks all finished in its grace; with a hand-back, only its own events' callbacks.
  expect(figures.duplicates).toBeLessThanOrEqual(figures.handedBack.reduce((sum, n) => sum + n, 0));
}, 720000);
