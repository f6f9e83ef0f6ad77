import { connect } from 'node:net';

/** Writes the bytes on a connection of their own and reads the answer until the server closes it (latin1). */
export function rawExchange(port: number, request: string): Promise<string> {
  return new Promise((resolve, reject) => {
    let answer = '';
    const socket = connect(port, '127.0.0.1', () => socket.write(request));
    socket.on('data', (d) => (answer += d.toString('latin1')));
    socket.on('close', () => resolve(answer));
    socket.on('error', reject);
  });
}
