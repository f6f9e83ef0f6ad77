import { connect } from 'node:net';

/** ApiVersions (key 18) v0: every broker version answers it, before authentication, with no state on its side. */
const API_VERSIONS = 18;
const CLIENT_ID = 'hookstream-health';

function apiVersionsRequest(correlationId: number): Buffer {
  const clientId = Buffer.from(CLIENT_ID);
  const body = Buffer.alloc(2 + 2 + 4 + 2 + clientId.length);
  body.writeInt16BE(API_VERSIONS, 0);
  body.writeInt16BE(0, 2);
  body.writeInt32BE(correlationId, 4);
  body.writeInt16BE(clientId.length, 8);
  clientId.copy(body, 10);
  const size = Buffer.alloc(4);
  size.writeInt32BE(body.length, 0);
  return Buffer.concat([size, body]);
}

/**
 * Asks one broker for its API versions over a connection of its own. A broker
 * that is down refuses the connection; a hung one (stopped, or stalled in a
 * pause) still has the kernel accept it but never answers: only a request
 * that gets its answer tells that the broker serves. Any complete answer with
 * our correlation id counts, an error code included: the broker is serving.
 */
/** `host:port` of a bootstrap broker (an IPv6 host in brackets) as net.connect takes it. */
export function brokerAddress(broker: string): { host: string; port: number } {
  const i = broker.lastIndexOf(':');
  return { host: broker.slice(0, i).replace(/^\[|\]$/g, ''), port: Number(broker.slice(i + 1)) };
}

/** What a ping found: an answer; the connection refused or broken (nothing listens); or no answer in time. */
export type PingResult = 'answered' | 'refused' | 'silent';

export async function brokerAnswers(broker: string, timeoutMs: number): Promise<boolean> {
  return (await pingBroker(broker, timeoutMs)) === 'answered';
}

export function pingBroker(broker: string, timeoutMs: number): Promise<PingResult> {
  const { host, port } = brokerAddress(broker);
  const correlationId = Math.floor(Math.random() * 0x7fffffff);
  return new Promise((resolve) => {
    let received = Buffer.alloc(0);
    const socket = connect({ host, port });
    const done = (result: PingResult) => {
      clearTimeout(timer);
      socket.destroy();
      resolve(result);
    };
    const timer = setTimeout(() => done('silent'), timeoutMs);
    socket.once('connect', () => socket.write(apiVersionsRequest(correlationId)));
    socket.on('data', (chunk: Buffer) => {
      received = Buffer.concat([received, chunk]);
      if (received.length < 8) return;
      const complete = received.length >= 4 + received.readInt32BE(0);
      if (complete) done(received.readInt32BE(4) === correlationId ? 'answered' : 'refused');
    });
    socket.once('error', () => done('refused'));
    socket.once('close', () => done('refused'));
  });
}
