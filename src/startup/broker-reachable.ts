import { connect } from 'node:net';
import { brokerAddress } from '../kafka/broker-ping';

function tryConnect(broker: string, timeoutMs: number): Promise<Error | undefined> {
  const { host, port } = brokerAddress(broker);
  return new Promise((resolve) => {
    const socket = connect({ host, port });
    const done = (err: Error | undefined) => {
      socket.destroy();
      resolve(err);
    };
    socket.setTimeout(timeoutMs, () => done(new Error(`no answer from ${broker} within ${timeoutMs} ms`)));
    socket.once('connect', () => done(undefined));
    socket.once('error', (err) => done(err));
  });
}

/**
 * undefined when any bootstrap broker accepts a TCP connection; else the
 * error of the last one (`connect ECONNREFUSED 127.0.0.1:9092`), which says
 * more to an operator than a client's exhausted retries.
 */
export async function brokersUnreachable(brokers: string[], timeoutMs = 2000): Promise<Error | undefined> {
  const errors = await Promise.all(brokers.map((b) => tryConnect(b, timeoutMs)));
  return errors.every((e) => e !== undefined) ? errors[errors.length - 1] : undefined;
}
