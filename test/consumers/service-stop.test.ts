import { Server, Socket } from 'node:net';
import { http } from '../support/http';
import { Receiver } from '../support/receiver';
import { startTestService, uniquePrefix } from '../support/test-service';
import { until } from '../support/until';

/*
 * An embedder that stops a service gets every connection it opened closed: the shared Kafka clients, and what the
 * consumer roles opened for themselves (a runner's partition writers, the bridge's callback connections). A socket
 * left open keeps the process alive, and a partition writer's transactional id stays registered with the broker.
 */

/** The sockets and servers of this process right now (Node keeps no public list of them; this one is long-standing). */
function openSockets(): Set<unknown> {
  const handles = (process as unknown as { _getActiveHandles(): unknown[] })._getActiveHandles();
  return new Set(handles.filter((h) => h instanceof Socket || h instanceof Server));
}

test('stopping a service (role all) that ran a task and called back closes every connection it opened', async () => {
  const before = openSockets();
  const receiver = await new Receiver(() => ({ status: 204 })).start();
  const service = await startTestService(uniquePrefix('stop'), { role: 'all' });
  const res = await http(service.url, '/tasks', {
    body: { type: 'countdown', input: { steps: 1, stepMs: 0 }, callbackUrl: `${receiver.url}/cb`, mode: 'once' },
  });
  expect(res.status).toBe(202);
  // The final event's callback: the runner wrote through its partition's writer, the bridge posted.
  await receiver.waitFor(1);
  await service.stop();
  await receiver.stop();
  const left = () => [...openSockets()].filter((s) => !before.has(s));
  // Closing sockets go away within a turn or two; one still open after seconds was never closed. Named if any is.
  const named = (h: unknown) =>
    h instanceof Socket ? `socket ${h.localPort} -> ${h.remoteAddress}:${h.remotePort}` : `server ${String(h)}`;
  await until(
    async () => (left().length === 0 ? true : undefined),
    5000,
    50,
    'no socket of the service left open',
  ).catch((err: Error) => {
    throw new Error(`${err.message}: ${left().map(named).join(', ')}`);
  });
});
