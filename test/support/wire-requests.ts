import type { ISocketFactory } from 'kafkajs';
import { connect } from 'node:net';

/**
 * kafkajs sockets that hand every request to `onRequest` as it is written: a Kafka request starts with its size
 * (int32), API key (int16), version (int16) and correlation id (int32), and kafkajs writes each in one buffer. Tests
 * count what a client sends on the wire with it.
 */
export function requestWatchingSockets(onRequest: (apiKey: number, request: Buffer) => void): ISocketFactory {
  return ({ host, port, onConnect }) => {
    const socket = connect({ host, port }, onConnect);
    const write = socket.write.bind(socket) as (chunk: unknown, ...rest: unknown[]) => boolean;
    socket.write = ((chunk: unknown, ...rest: unknown[]) => {
      if (Buffer.isBuffer(chunk) && chunk.length >= 12) onRequest(chunk.readInt16BE(4), chunk);
      return write(chunk, ...rest);
    }) as typeof socket.write;
    return socket;
  };
}
