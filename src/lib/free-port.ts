import { createServer } from 'node:net';

/** A port free on 127.0.0.1 right now (the OS picks it); someone else may take it before the caller binds it. */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      const port = typeof address === 'object' && address ? address.port : 0;
      server.close(() => (port ? resolve(port) : reject(new Error('the OS gave no port'))));
    });
  });
}
