import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, openSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { testBrokers, TENANT_A_KEY, TENANT_B_KEY } from './test-service';

const MAIN = join(__dirname, '../../dist/src/main.js');

export interface ChildService {
  process: ChildProcess;
  logFile: string;
  kill(signal: NodeJS.Signals): Promise<number | null>;
}

/** Runs a role as its own OS process from the build, as an operator would: `node dist/src/main.js <role>`. */
export async function startChildService(role: string, prefix: string, env: Record<string, string> = {}): Promise<ChildService> {
  if (!existsSync(MAIN)) throw new Error('dist/src/main.js is missing: `npm test` builds it first (or run `npm run build`)');
  const logFile = join(tmpdir(), `hookstream-${role}-${process.pid}-${Date.now()}.log`);
  const fd = openSync(logFile, 'w');
  const child = spawn(process.execPath, [MAIN, role], {
    stdio: ['ignore', 'pipe', fd],
    env: {
      PATH: process.env.PATH ?? '', KAFKA_BROKERS: testBrokers().join(','), TOPIC_PREFIX: prefix, PORT: '0', HOST: '127.0.0.1',
      API_KEYS: `tenant-a:${TENANT_A_KEY},tenant-b:${TENANT_B_KEY}`, LOG_LEVEL: 'warn', CALLBACK_ALLOW_PRIVATE: 'true', ...env,
    },
  });
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  await new Promise<void>((resolve, reject) => {
    let out = '';
    const timer = setTimeout(() => reject(new Error(`${role} did not start in 60 s; see ${logFile}`)), 60000);
    child.stdout?.on('data', (d: Buffer) => {
      out += d.toString();
      if (out.includes('hookstream is running')) { clearTimeout(timer); resolve(); }
    });
    child.once('exit', (code) => { clearTimeout(timer); reject(new Error(`${role} exited with ${code} before starting; see ${logFile}`)); });
  });
  return {
    process: child,
    logFile,
    kill(signal) {
      if (child.exitCode === null && child.signalCode === null) child.kill(signal);
      return exited;
    },
  };
}
