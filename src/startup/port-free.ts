import { createServer } from 'node:net';

/** PORT is held by another process: found before the broker starts and the state replays, not after. */
export class PortTakenError extends Error {
  constructor(host: string, port: number) {
    super(`PORT ${port} on ${host} is taken by another process; stop it or set PORT to a free port`);
    this.name = 'PortTakenError';
  }
}

/**
 * Throws PortTakenError when `port` cannot be listened on. A check, not a reservation: the port is let go at once,
 * so a process that takes it meanwhile is still caught by the real listen. Other listen errors are left to that.
 */
export async function assertPortFree(host: string, port: number): Promise<void> {
  if (port === 0) return;
  const server = createServer();
  const taken = await new Promise<boolean>((resolve) => {
    server.once('error', (err: NodeJS.ErrnoException) => resolve(err.code === 'EADDRINUSE'));
    server.listen({ host, port, exclusive: true }, () => resolve(false));
  });
  await new Promise<void>((resolve) => (server.listening ? server.close(() => resolve()) : resolve()));
  if (taken) throw new PortTakenError(host, port);
}
