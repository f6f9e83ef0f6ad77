import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { connect, createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  KafkaJSConnectionError,
  KafkaJSNonRetriableError,
  KafkaJSNumberOfRetriesExceeded,
  KafkaJSProtocolError,
} from 'kafkajs';
import { ConfigError, loadConfig } from '../../src/config';
import { KafkaUnavailableError } from '../../src/kafka/types';
import { KAFKA_VERSION } from '../../src/embedded-kafka/kafka-version';
import { startFailure } from '../../src/embedded-kafka/broker-jvm';
import { startLocalBroker, type LocalBroker } from '../../src/embedded-kafka/local-broker';
import { javaMajorVersion, resolveBrokerJars } from '../../src/embedded-kafka/local-broker-jars';
import { freePort } from '../../src/lib/free-port';
import { acquirePidLock, LockHeldError } from '../../src/lib/pid-lock';
import { createLogger } from '../../src/logger';
import { brokersUnreachable } from '../../src/startup/broker-reachable';
import { isKafkaNotReady } from '../../src/startup/kafka-not-ready';
import { KafkaStartupTimeoutError, StartupAbortedError, waitForKafka } from '../../src/startup/wait-for-kafka';
import { silentServer } from '../support/silent-server';
import { run } from '../support/embedded-process';
import { TENANT_A_KEY, TENANT_B_KEY, uniquePrefix } from '../support/test-service';

const MAIN = join(__dirname, '../../dist/src/main.js');
const hasJava = (javaMajorVersion() ?? 0) >= 17;
const withJava = hasJava ? test : test.skip;
const silent = createLogger('silent');

function accepts(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect({ host: '127.0.0.1', port });
    const done = (ok: boolean) => {
      socket.destroy();
      resolve(ok);
    };
    socket.once('connect', () => done(true));
    socket.once('error', () => done(false));
    socket.setTimeout(2000, () => done(false));
  });
}

/** `node dist/src/main.js …` with stdout and stderr collected together. */
const runMain = (args: string[], env: Record<string, string>) => run([MAIN, ...args], env);

function roleEnv(brokers: string, extra: Record<string, string> = {}): Record<string, string> {
  return {
    KAFKA_BROKERS: brokers,
    TOPIC_PREFIX: uniquePrefix('patient'),
    PORT: '0',
    HOST: '127.0.0.1',
    LOG_LEVEL: 'warn',
    API_KEYS: `tenant-a:${TENANT_A_KEY},tenant-b:${TENANT_B_KEY}`,
    ...extra,
  };
}

/** A cache folder of the test's own that shares the jars of the usual cache: no second download. */
function cacheWithSharedJars(name: string): string {
  const shared = loadConfig({}).cacheDir;
  resolveBrokerJars(shared);
  const dir = mkdtempSync(join(tmpdir(), `hookstream-${name}-`));
  symlinkSync(join(shared, `kafka-${KAFKA_VERSION}`), join(dir, `kafka-${KAFKA_VERSION}`));
  return dir;
}

describe('what start-up retries', () => {
  test('Kafka not reachable or not ready yet: retried; anything else: not', () => {
    const refused = new KafkaJSConnectionError('Connection error: connect ECONNREFUSED 127.0.0.1:1');
    expect(isKafkaNotReady(new KafkaJSNumberOfRetriesExceeded(refused, { retryCount: 5, retryTime: 2000 }))).toBe(true);
    expect(isKafkaNotReady(new KafkaUnavailableError('Kafka did not acknowledge within 5000 ms'))).toBe(true);
    const protocolError = (type: string) => new KafkaJSProtocolError(Object.assign(new Error(type), { type }));
    const loading = protocolError('COORDINATOR_NOT_AVAILABLE');
    expect(isKafkaNotReady(loading)).toBe(true);
    expect(isKafkaNotReady(new KafkaUnavailableError('topics have no leaders after 30000 ms: a, b'))).toBe(true);
    // kafkajs's plain Error for a connection whose ApiVersions handshake did not finish (a stalled broker)
    expect(isKafkaNotReady(new Error('Broker not connected'))).toBe(true);

    const denied = protocolError('TOPIC_AUTHORIZATION_FAILED');
    expect(isKafkaNotReady(denied)).toBe(false);
    expect(isKafkaNotReady(new KafkaJSNumberOfRetriesExceeded(denied, { retryCount: 5, retryTime: 2000 }))).toBe(false);
    expect(isKafkaNotReady(new KafkaJSNonRetriableError('Invalid replication factor'))).toBe(false);
    expect(isKafkaNotReady(new ConfigError(['PORT must be an integer']))).toBe(false);
    expect(isKafkaNotReady(new TypeError("Cannot read properties of undefined (reading 'topics')"))).toBe(false);
    const portTaken = Object.assign(new Error('listen EADDRINUSE: address already in use'), { code: 'EADDRINUSE' });
    expect(isKafkaNotReady(portTaken)).toBe(false);
  });

  const fast = { brokers: ['127.0.0.1:1'], logger: silent, firstDelayMs: 10, maxDelayMs: 40, progressEveryMs: 100 };

  test('retries with progress lines until an attempt succeeds', async () => {
    const lines: string[] = [];
    let attempts = 0;
    const value = await waitForKafka(
      async () => {
        attempts += 1;
        if (attempts < 4) throw new KafkaUnavailableError(`not yet ${attempts}`);
        return 'up';
      },
      { ...fast, timeoutMs: 30000, signal: new AbortController().signal, progress: (l) => lines.push(l) },
    );
    expect(value).toBe('up');
    expect(attempts).toBe(4);
    // A line may come before the first attempt has failed (a busy machine): the first with an error names it.
    const told = lines.find((l) => l.includes('last error'));
    expect(told).toMatch(/^waiting for Kafka at 127\.0\.0\.1:1 \(\d+ s so far; last error: not yet 1\)$/);
  });

  test('while no broker accepts a connection, no attempt is made and the connection error is shown', async () => {
    const port = await freePort();
    const lines: string[] = [];
    let attempts = 0;
    const checks: (Error | undefined)[] = [];
    const value = await waitForKafka(
      async () => {
        attempts += 1;
        return 'up';
      },
      {
        ...fast,
        brokers: [`127.0.0.1:${port}`],
        timeoutMs: 30000,
        signal: new AbortController().signal,
        progress: (l) => lines.push(l),
        precheck: async () => {
          const result = await brokersUnreachable([`127.0.0.1:${port}`]);
          checks.push(result);
          // Two refusals, then a pretend broker.
          return checks.length < 3 ? result : undefined;
        },
      },
    );
    expect(value).toBe('up');
    expect(attempts).toBe(1);
    expect(checks[0]?.message).toMatch(`ECONNREFUSED 127.0.0.1:${port}`);
    // The first check's connect can take longer than a progress tick on a busy machine: a line without an error then
    // comes first. None says Kafka takes connections, and the first with an error names the refusal.
    expect(lines.filter((l) => l.includes('accepts connections'))).toEqual([]);
    expect(lines.find((l) => l.includes('last error'))).toMatch(`last error: connect ECONNREFUSED 127.0.0.1:${port}`);
  });

  test('while an attempt runs on a broker that takes connections, the progress says so, not that Kafka is awaited', async () => {
    // A restart after a SIGKILL: the group keeps the dead member until its session ends, so the first attempt
    // (joining) takes about 10 s on a broker that is up; "waiting for Kafka" would send an operator the wrong way.
    const lines: string[] = [];
    let release: (v: string) => void = () => undefined;
    const waiting = waitForKafka(() => new Promise<string>((r) => (release = r)), {
      ...fast,
      timeoutMs: 30000,
      signal: new AbortController().signal,
      progress: (l) => {
        lines.push(l);
        release('up');
      },
      precheck: async () => undefined,
    });
    expect(await waiting).toBe('up');
    expect(lines[0]).toMatch(/^Kafka at 127\.0\.0\.1:1 accepts connections; still starting on it \(\d+ s so far\)$/);
    expect(lines[0]).not.toMatch(/waiting for Kafka/);
  });

  test('another error ends the wait at once, after one attempt', async () => {
    let attempts = 0;
    const bug = new TypeError('a bug');
    await expect(
      waitForKafka(
        async () => {
          attempts += 1;
          throw bug;
        },
        {
          ...fast,
          timeoutMs: 30000,
          signal: new AbortController().signal,
          progress: () => undefined,
        },
      ),
    ).rejects.toBe(bug);
    expect(attempts).toBe(1);
  });

  test('at the limit it gives up with the last error, and stops an attempt that succeeds too late', async () => {
    let release: (v: string) => void = () => undefined;
    const discarded: string[] = [];
    let attempts = 0;
    const waiting = waitForKafka(
      () => {
        attempts += 1;
        if (attempts === 1) return Promise.reject(new KafkaUnavailableError('broker away'));
        return new Promise<string>((r) => {
          release = r;
        });
      },
      {
        ...fast,
        timeoutMs: 300,
        signal: new AbortController().signal,
        progress: () => undefined,
        discard: (v) => {
          discarded.push(v);
        },
      },
    );
    await expect(waiting).rejects.toThrow(KafkaStartupTimeoutError);
    await expect(waiting).rejects.toThrow(/after 0 s \(KAFKA_STARTUP_TIMEOUT_MS=300\); last error: broker away/);
    release('late service');
    await new Promise((r) => setImmediate(r));
    expect(discarded).toEqual(['late service']);
  });

  test('an abort (a signal) ends the wait at once', async () => {
    const abort = new AbortController();
    const waiting = waitForKafka(() => Promise.reject(new KafkaUnavailableError('down')), {
      ...fast,
      maxDelayMs: 60000,
      timeoutMs: 120000,
      signal: abort.signal,
      progress: () => undefined,
    });
    setTimeout(() => abort.abort(), 50);
    await expect(waiting).rejects.toThrow(StartupAbortedError);
  });
});

describe('the data folder lock', () => {
  let dir: string;
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'hookstream-lock-'));
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  test('holds the pid; a second claim is refused; release frees it', () => {
    const file = join(dir, 'hookstream.lock');
    const lock = acquirePidLock(file);
    expect(readFileSync(file, 'utf8').split('\n')[0]).toBe(String(process.pid));
    expect(() => acquirePidLock(file)).toThrow(LockHeldError);
    lock.release();
    expect(existsSync(file)).toBe(false);
    acquirePidLock(file).release();
  });

  test('a live process holding it is named; a dead one, or a reused pid, is taken over', async () => {
    const file = join(dir, 'hookstream.lock');
    const other = spawn('sleep', ['60']);
    try {
      const pid = other.pid as number;
      writeFileSync(file, `${pid}\n`);
      let refused: unknown;
      try {
        acquirePidLock(file);
      } catch (err) {
        refused = err;
      }
      expect(refused).toBeInstanceOf(LockHeldError);
      expect((refused as LockHeldError).pid).toBe(pid);

      // The same pid with another start time is another process: the lock's owner is gone.
      writeFileSync(file, `${pid}\n1\n`);
      acquirePidLock(file).release();
    } finally {
      other.kill('SIGKILL');
    }
    await new Promise((r) => other.once('exit', r));
    writeFileSync(file, `${other.pid}\n`);
    const lock = acquirePidLock(file);
    expect(readFileSync(file, 'utf8').split('\n')[0]).toBe(String(process.pid));
    lock.release();
  });
});

describe('a patient start', () => {
  beforeAll(() => {
    if (!existsSync(MAIN)) throw new Error('dist/ is missing: `npm test` builds it first (or run `npm run build`)');
  });

  withJava(
    'a role started before its broker prints waiting lines, then starts once the broker is up',
    async () => {
      const port = await freePort();
      const httpPort = await freePort();
      const app = runMain(['api'], roleEnv(`127.0.0.1:${port}`, { PORT: String(httpPort) }));
      let broker: LocalBroker | undefined;
      try {
        const waiting = new RegExp(
          `waiting for Kafka at 127\\.0\\.0\\.1:${port} \\((\\d+) s so far; last error: [^\\n]*ECONNREFUSED`,
        );
        const lines = await app.waitFor(waiting, 30000, 2);
        expect(Number(lines[1][1])).toBeGreaterThan(Number(lines[0][1]));
        broker = await startLocalBroker({
          cacheDir: loadConfig({}).cacheDir,
          persistent: false,
          port,
          startTimeoutMs: 60000,
        });
        const [banner] = await app.waitFor(/hookstream is running[^]*API: +(http:\/\/\S+)/, 60000);
        // The service took over the port the process held while it waited.
        expect(banner[1]).toBe(`http://127.0.0.1:${httpPort}`);
        const res = await fetch(`${banner[1]}/health/ready`);
        expect(res.status).toBe(200);
        app.child.kill('SIGTERM');
        expect(await app.exited).toBe(0);
      } finally {
        app.child.kill('SIGKILL');
        await broker?.stop();
      }
    },
    90000,
  );

  test('with no broker, it exits 1 with one message when KAFKA_STARTUP_TIMEOUT_MS passes', async () => {
    const port = await freePort();
    const app = runMain(['runner'], roleEnv(`127.0.0.1:${port}`, { KAFKA_STARTUP_TIMEOUT_MS: '3000' }));
    expect(await app.exitWithin(60000)).toBe(1);
    expect(app.output()).toMatch(
      new RegExp(
        `hookstream: gave up waiting for Kafka at 127\\.0\\.0\\.1:${port} after 3 s ` +
          '\\(KAFKA_STARTUP_TIMEOUT_MS=3000\\); last error: .*ECONNREFUSED',
      ),
    );
    expect(app.output()).not.toMatch(/\n\s+at /);
    expect(app.output()).not.toContain('hookstream is running');
  }, 70000);

  test('a broker that takes connections and never answers (stalled) is waited for too, not a crash', async () => {
    // kafkajs fails a connection whose handshake got no answer with a plain "Broker not connected", which start-up
    // once took for a fault of its own: every role exited within 9 s of a broker stalled during a deploy.
    const silentBroker = silentServer();
    await new Promise<void>((r) => silentBroker.listen(0, '127.0.0.1', () => r()));
    const port = (silentBroker.address() as { port: number }).port;
    try {
      const app = runMain(['runner'], roleEnv(`127.0.0.1:${port}`, { KAFKA_STARTUP_TIMEOUT_MS: '15000' }));
      try {
        expect(await app.exitWithin(60000)).toBe(1);
        expect(app.output()).toMatch(
          new RegExp(`hookstream: gave up waiting for Kafka at 127\\.0\\.0\\.1:${port} after 15 s`),
        );
        expect(app.output()).not.toContain('failed to start');
      } finally {
        app.child.kill('SIGKILL');
      }
    } finally {
      silentBroker.close();
    }
  }, 70000);

  test('while it waits for Kafka, PORT answers: /health/live 200, anything else a 503 not-ready Problem', async () => {
    const [kafkaPort, port] = [await freePort(), await freePort()];
    const app = runMain(
      ['api'],
      roleEnv(`127.0.0.1:${kafkaPort}`, { PORT: String(port), KAFKA_STARTUP_TIMEOUT_MS: '60000' }),
    );
    try {
      await app.waitFor(/waiting for Kafka at/, 30000);
      const base = `http://127.0.0.1:${port}`;
      const live = await fetch(`${base}/health/live`);
      expect(live.status).toBe(200);
      expect(await live.json()).toMatchObject({ status: 'up' });
      for (const path of ['/health/ready', '/tasks']) {
        const res = await fetch(`${base}${path}`, { headers: { 'x-request-id': 'while-starting' } });
        expect(res.status).toBe(503);
        expect(res.headers.get('content-type')).toBe('application/problem+json; charset=utf-8');
        expect(res.headers.get('retry-after')).toBe('5');
        expect(await res.json()).toMatchObject({ status: 503, instance: path, logref: 'while-starting' });
      }
      app.child.kill('SIGTERM');
      expect(await app.exitWithin(30000)).toBe(0);
    } finally {
      app.child.kill('SIGKILL');
    }
  }, 70000);

  test('SIGTERM while waiting for Kafka exits 0 without waiting out the limit', async () => {
    const port = await freePort();
    const app = runMain(['bridge'], roleEnv(`127.0.0.1:${port}`, { KAFKA_STARTUP_TIMEOUT_MS: '120000' }));
    try {
      await app.waitFor(/waiting for Kafka at/, 30000);
      app.child.kill('SIGTERM');
      // Far below the 120 s limit: the exit came from the signal, not from giving up.
      expect(await app.exitWithin(30000)).toBe(0);
    } finally {
      app.child.kill('SIGKILL');
    }
  }, 70000);

  test('a cache folder that cannot be used (a file) exits 1 at once, naming HOOKSTREAM_CACHE_DIR, no stack', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'hookstream-cachefile-'));
    const file = join(dir, 'not-a-folder');
    writeFileSync(file, '');
    try {
      const env = { ...roleEnv(''), KAFKA_BROKERS: '', HOOKSTREAM_CACHE_DIR: file };
      const app = runMain([], env);
      try {
        expect(await app.exitWithin(10000)).toBe(1);
        expect(app.output()).toContain(`HOOKSTREAM_CACHE_DIR=${JSON.stringify(file)} must be a folder`);
        expect(app.output()).not.toMatch(/failed to start|\n\s+at /);
      } finally {
        app.child.kill('SIGKILL');
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }, 30000);

  test('an error that is not about Kafka (PORT taken) exits 1 at once, naming it, before any wait for Kafka', async () => {
    const busy: Server = createServer();
    await new Promise<void>((r) => busy.listen(0, '127.0.0.1', () => r()));
    const port = (busy.address() as { port: number }).port;
    try {
      // A broker that never answers: a process that found the port only when it listened would wait for it 20 s.
      const env = roleEnv(`127.0.0.1:${await freePort()}`, { PORT: String(port), KAFKA_STARTUP_TIMEOUT_MS: '20000' });
      const app = runMain(['runner'], env);
      try {
        expect(await app.exitWithin(10000)).toBe(1);
        expect(app.output()).toContain(`PORT ${port} on 127.0.0.1 is taken`);
        // A retry follows only a "not ready" failure, which always prints its error first.
        expect(app.output()).not.toMatch(/waiting for Kafka|last error/);
      } finally {
        if (app.child.exitCode === null) app.child.kill('SIGKILL');
      }
    } finally {
      busy.close();
    }
  }, 70000);

  test.each([
    ['no address of this machine', '192.0.2.99', 'is no address of this machine (EADDRNOTAVAIL)'],
    ['a name that does not resolve', 'nonexistent.invalid', 'is a name this machine cannot resolve'],
  ])(
    'a HOST that is %s exits 1 at once, naming HOST, no stack',
    async (_what, host, told) => {
      const env = roleEnv(`127.0.0.1:${await freePort()}`, { HOST: host, PORT: String(await freePort()) });
      const app = runMain(['runner'], env);
      try {
        expect(await app.exitWithin(20000)).toBe(1);
        expect(app.output()).toContain(`hookstream: HOST=${host} ${told}`);
        expect(app.output()).not.toMatch(/\n\s+at /);
      } finally {
        if (app.child.exitCode === null) app.child.kill('SIGKILL');
      }
    },
    30000,
  );

  withJava(
    'a second embedded start on one cache folder exits 1 at once, naming the first, which runs on',
    async () => {
      const cacheDir = cacheWithSharedJars('lock');
      const env = { HOOKSTREAM_CACHE_DIR: cacheDir, PORT: '0', HOST: '127.0.0.1', LOG_LEVEL: 'warn' };
      const lockFile = join(cacheDir, 'data', 'default', 'hookstream.lock');
      const first = runMain([], env);
      try {
        const deadline = Date.now() + 30000;
        while (!existsSync(lockFile) && Date.now() < deadline && first.child.exitCode === null) {
          await new Promise((r) => setTimeout(r, 50));
        }
        expect(readFileSync(lockFile, 'utf8').split('\n')[0]).toBe(String(first.child.pid));

        const second = runMain([], env);
        expect(await second.exitWithin(30000)).toBe(1);
        const named = `hookstream: Another hookstream \\(pid ${first.child.pid}\\) is already running the embedded Kafka`;
        expect(second.output()).toMatch(new RegExp(named));
        expect(second.output()).not.toMatch(/\n\s+at /);

        const running = /hookstream is running[^]*API: +(http:\/\/\S+)[^]*Kafka: +127\.0\.0\.1:(\d+)/;
        const [banner] = await first.waitFor(running, 80000);
        expect((await fetch(`${banner[1]}/health/ready`)).status).toBe(200);
        // The second start left the first's settings alone.
        const [savedPort] = JSON.parse(
          readFileSync(join(cacheDir, 'data', 'default', 'ports.json'), 'utf8'),
        ) as number[];
        expect(savedPort).toBe(Number(banner[2]));
        first.child.kill('SIGINT');
        expect(await first.exited).toBe(0);
        expect(existsSync(lockFile)).toBe(false);
      } finally {
        first.child.kill('SIGKILL');
        rmSync(cacheDir, { recursive: true, force: true });
      }
    },
    200000,
  );

  withJava(
    'the embedded broker starts on another port when its port is taken before the JVM binds it',
    async () => {
      const cacheDir = cacheWithSharedJars('race');
      const preferred = await freePort();
      // Another process takes the port once the broker has chosen it (its properties name it) but before the JVM binds.
      const grab = `
      const fs = require('fs'); const net = require('net'); const path = require('path');
      const data = ${JSON.stringify(join(cacheDir, 'data'))};
      const chosen = () => (fs.existsSync(data) ? fs.readdirSync(data) : []).some((d) => {
        try {
          const props = fs.readFileSync(path.join(data, d, 'server.properties'), 'utf8');
          return props.includes('PLAINTEXT://127.0.0.1:${preferred},');
        } catch { return false; }
      });
      const poll = setInterval(() => {
        if (!chosen()) return;
        clearInterval(poll);
        const s = net.createServer();
        s.once('error', () => { console.log('busy'); process.exit(1); });
        s.listen(${preferred}, '127.0.0.1', () => console.log('bound'));
      }, 5);`;
      const grabber = spawn(process.execPath, ['-e', grab], { stdio: ['ignore', 'pipe', 'inherit'] });
      let grabbed = '';
      grabber.stdout.on('data', (d: Buffer) => {
        grabbed += d.toString();
      });
      let broker: LocalBroker | undefined;
      try {
        broker = await startLocalBroker({
          cacheDir,
          persistent: false,
          preferredPort: preferred,
          // Two JVM starts (the first fails to bind): 70 s was too short once at a load average of 25.
          startTimeoutMs: 150000,
        });
        expect(grabbed.trim()).toBe('bound');
        const port = Number(broker.bootstrap.split(':')[1]);
        expect(port).not.toBe(preferred);
        expect(await accepts(port)).toBe(true);
        expect(readFileSync(broker.logFile, 'utf8')).toContain('Kafka Server started');
      } finally {
        grabber.kill('SIGKILL');
        await broker?.stop();
        rmSync(cacheDir, { recursive: true, force: true });
      }
    },
    200000,
  );

  test('the broker log tells a taken port, and which, from other failures', () => {
    const bind =
      '[main] ERROR kafka.network.DataPlaneAcceptor - Unable to start acceptor for PLAINTEXT\n' +
      'org.apache.kafka.common.KafkaException: ' +
      'Socket server failed to bind to 127.0.0.1:9092: Address already in use.\n' +
      'Caused by: java.net.BindException: Address already in use';
    expect(startFailure(bind)).toEqual({ kind: 'port-taken', port: 9092 });
    const unnamed = startFailure('java.net.BindException: Address already in use');
    expect(unnamed).toEqual({ kind: 'port-taken', port: undefined });
    const locked = 'Failed to acquire lock on file .lock in /x/logs. A Kafka instance in another process is using it.';
    expect(startFailure(locked)).toEqual({ kind: 'data-locked' });
    expect(startFailure('[main] INFO kafka.server.KafkaRaftServer - Kafka Server started')).toBeUndefined();
  });
});
