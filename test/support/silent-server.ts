import { createServer, type Server, type Socket } from 'node:net';

/**
 * A TCP server that takes connections and never answers: a stalled broker, as the kernel of a stopped one still
 * accepts. Its close() also closes the connections it holds: they read nothing, so a peer's close never reaches them
 * and they would outlive the test.
 */
export function silentServer(): Server {
  const held = new Set<Socket>();
  const server = createServer((socket) => {
    held.add(socket);
    socket.once('close', () => held.delete(socket));
  });
  const close = server.close.bind(server);
  server.close = ((callback?: (err?: Error) => void) => {
    for (const socket of held) socket.destroy();
    return close(callback);
  }) as Server['close'];
  return server;
}
