import { createServer, type Socket } from 'node:net';
import { once } from 'node:events';
import { noDelaySockets } from '../../src/kafka/kafka-client';

/** A port nothing listens on: one the system gave a server that is closed again. */
async function closedPort(): Promise<number> {
  const server = createServer().listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as { port: number };
  server.close();
  await once(server, 'close');
  return port;
}

/** Node's handle of a socket: whether it keeps the process running. */
const keepsProcess = (socket: Socket) => (socket as unknown as { _handle: { hasRef(): boolean } })._handle.hasRef();

describe("the Kafka client's sockets", () => {
  test('a refused socket unref-ed again and again (as kafkajs does on every disconnect) gathers no listeners', async () => {
    const port = await closedPort();
    const socket = noDelaySockets({ host: '127.0.0.1', port, ssl: {}, onConnect: () => undefined }) as Socket;
    // events.once would reject on the 'error' that comes first.
    await new Promise((resolve) => socket.on('error', () => undefined).once('close', resolve));
    const before = socket.listenerCount('connect');
    // Node would add a 'connect' listener per call here, and warn of a leak past ten.
    for (let i = 0; i < 20; i += 1) socket.unref();
    expect(socket.listenerCount('connect')).toBe(before);
  });

  test('a connected socket is still unref-ed', async () => {
    const server = createServer(() => undefined).listen(0, '127.0.0.1');
    await once(server, 'listening');
    const { port } = server.address() as { port: number };
    let socket: Socket | undefined;
    await new Promise<void>((resolve) => {
      socket = noDelaySockets({ host: '127.0.0.1', port, ssl: {}, onConnect: () => resolve() }) as Socket;
    });
    const connected = socket as Socket;
    expect(keepsProcess(connected)).toBe(true);
    connected.unref();
    expect(keepsProcess(connected)).toBe(false);
    connected.destroy();
    server.close();
  });
});
