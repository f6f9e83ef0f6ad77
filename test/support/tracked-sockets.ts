import type { ISocketFactory } from 'kafkajs';
import { connect, type Socket } from 'node:net';
import { until } from './until';

/**
 * kafkajs sockets that are remembered: a test asks which are still open once a client was stopped. A socket left
 * open keeps the process alive, so "stopped" means none is.
 */
export function trackedSockets(): { factory: ISocketFactory; allClosed(): Promise<void> } {
  const opened: Socket[] = [];
  const open = () => opened.filter((s) => !s.destroyed);
  return {
    factory: ({ host, port, onConnect }) => {
      const socket = connect({ host, port }, onConnect);
      opened.push(socket);
      return socket;
    },
    // Closing sockets go away within a turn or two; one still open after seconds was never closed.
    allClosed: () =>
      until(async () => (open().length === 0 ? true : undefined), 5000, 50, 'every socket closed').then(
        () => undefined,
        (err: Error) => {
          throw new Error(`${err.message}: ${open().length} of ${opened.length} still open`);
        },
      ),
  };
}
