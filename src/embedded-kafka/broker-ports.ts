/** The embedded broker's client and controller ports: free ones, kept across restarts of a persistent broker. */
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { freePort } from '../lib/free-port';
import type { LocalBrokerOptions } from './local-broker';

function portIsFree(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const s = createServer();
    s.once('error', () => resolve(false));
    s.listen(port, '127.0.0.1', () => s.close(() => resolve(true)));
  });
}

async function freePortAvoiding(avoid: ReadonlySet<number>): Promise<number> {
  for (;;) {
    const port = await freePort();
    if (!avoid.has(port)) return port;
  }
}

/**
 * A persistent broker keeps its ports across restarts when they are free, so clients can reconnect.
 * `avoid`: ports a previous try found taken when the JVM bound them.
 */
export async function choosePorts(
  options: Pick<LocalBrokerOptions, 'port' | 'preferredPort' | 'persistent'>,
  dataDir: string,
  avoid: ReadonlySet<number>,
): Promise<[number, number]> {
  const saved = join(dataDir, 'ports.json');
  const usable = async (p: number) => !avoid.has(p) && (await portIsFree(p));
  let port = options.port;
  let controllerPort: number | undefined;
  if (port === undefined && options.persistent && existsSync(saved)) {
    const [p, c] = JSON.parse(readFileSync(saved, 'utf8')) as [number, number];
    if ((await usable(p)) && (await usable(c))) [port, controllerPort] = [p, c];
  }
  const preferred = options.preferredPort;
  port ??= preferred !== undefined && (await usable(preferred)) ? preferred : await freePortAvoiding(avoid);
  controllerPort ??= await freePortAvoiding(new Set([...avoid, port]));
  if (options.persistent) writeFileSync(saved, JSON.stringify([port, controllerPort]));
  return [port, controllerPort];
}
