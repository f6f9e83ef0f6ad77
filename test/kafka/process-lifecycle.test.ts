import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, realpathSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadConfig } from '../../src/config';
import { formatStorage, serverProperties } from '../../src/embedded-kafka/broker-storage';
import { javaMajorVersion, resolveBrokerJars } from '../../src/embedded-kafka/local-broker-jars';
import { startChildService } from '../support/child-service';
import { alive, brokerJvmOf, DIST, gone, run, startOnEmbedded } from '../support/embedded-process';
import { uniquePrefix } from '../support/test-service';

const hasJava = (javaMajorVersion() ?? 0) >= 17;
const withJava = hasJava ? test : test.skip;
if (!hasJava)
  console.warn('embedded-broker lifecycle tests skipped: they start brokers from the Kafka jars, which needs Java 17+');

const javaChildOf = (pid: number) =>
  Number(
    spawnSync('pgrep', ['-P', String(pid), 'java'], { encoding: 'utf8' })
      .stdout.trim()
      .split('\n')[0],
  );

describe('process lifecycle', () => {
  beforeAll(() => {
    if (!existsSync(join(DIST, 'main.js')))
      throw new Error('dist/ is missing: `npm test` builds it first (or run `npm run build`)');
  });

  withJava(
    'a crashed parent (SIGKILL) leaves no orphaned Kafka JVM',
    async () => {
      const cacheDir = mkdtempSync(join(tmpdir(), 'hookstream-orphan-'));
      const script =
        `require(${JSON.stringify(join(DIST, 'embedded-kafka/local-broker.js'))}).startLocalBroker({ cacheDir: ${JSON.stringify(cacheDir)}, persistent: false })` +
        '.then((b) => { console.log("watchdog=" + b.pid); setInterval(() => {}, 1000); });';
      const parent = run(['-e', script], {});
      try {
        const [[, watchdog]] = await parent.waitFor(/watchdog=(\d+)/, 120000);
        const java = javaChildOf(Number(watchdog));
        expect(java).toBeGreaterThan(0);
        parent.child.kill('SIGKILL');
        expect(await gone(java, 30000)).toBe(true);
      } finally {
        parent.child.kill('SIGKILL');
        rmSync(cacheDir, { recursive: true, force: true });
      }
    },
    180000,
  );

  withJava(
    '`npm start` on the embedded default: prints URL, key and bootstrap; Ctrl-C stops it and its broker, exit 0',
    async () => {
      const cacheDir = mkdtempSync(join(tmpdir(), 'hookstream-start-'));
      const app = startOnEmbedded(cacheDir);
      try {
        await app.waitFor('hookstream is running', 180000);
        const out = app.output();
        const url = /API: +(http:\/\/\S+)/.exec(out)?.[1] as string;
        const key = /API key[^:]*: (\S+)/.exec(out)?.[1] as string;
        expect(out).toMatch(/Kafka: +127\.0\.0\.1:\d+ \(embedded Apache Kafka 4\.1\.1\)/);
        const res = await fetch(`${url}/orders`, { headers: { authorization: `Bearer ${key}` } });
        expect(res.status).toBe(200);
        const java = brokerJvmOf(cacheDir);
        expect(java).toBeGreaterThan(0);
        app.child.kill('SIGINT');
        expect(await app.exited).toBe(0);
        expect(await gone(java, 30000)).toBe(true);
      } finally {
        app.child.kill('SIGKILL');
        rmSync(cacheDir, { recursive: true, force: true });
      }
    },
    300000,
  );

  withJava(
    'an embedded broker that dies on its own (SIGKILL) stops the process: exit 1, naming it; no process runs without it',
    async () => {
      // Left running, it answered 503 for ever with /health/live 200, and its data lock was free for a second start.
      const cacheDir = mkdtempSync(join(tmpdir(), 'hookstream-broker-died-'));
      const app = startOnEmbedded(cacheDir);
      let java = 0;
      try {
        await app.waitFor('hookstream is running', 180000);
        // The JVM itself, not the shell that watches it (whose command line names the same class and folder).
        java = javaChildOf(brokerJvmOf(cacheDir)) || brokerJvmOf(cacheDir);
        expect(readFileSync(`/proc/${java}/comm`, 'utf8').trim()).toBe('java');
        process.kill(java, 'SIGKILL');
        expect(await app.exited).toBe(1);
        expect(app.output()).toContain('the embedded Kafka broker exited on its own; hookstream stops too');
        expect(app.output()).toContain(join(cacheDir, 'data', 'default', 'broker.log'));
        // One JSON line whose `pid` is still this process's: the broker's is named apart, not a second `pid` key.
        const line = app
          .output()
          .split('\n')
          .find((l) => l.includes('exited on its own')) as string;
        expect(JSON.parse(line)).toMatchObject({ pid: app.child.pid, brokerWatchdogPid: expect.any(Number) });
      } finally {
        app.child.kill('SIGKILL');
        if (java > 0) await gone(java, 30000);
        rmSync(cacheDir, { recursive: true, force: true });
      }
    },
    300000,
  );

  withJava(
    'SIGTERM while the embedded broker hangs: the process still stops its broker, within the shutdown limit',
    async () => {
      const cacheDir = mkdtempSync(join(tmpdir(), 'hookstream-hung-'));
      const app = startOnEmbedded(cacheDir);
      let java = 0;
      try {
        await app.waitFor('hookstream is running', 180000);
        java = brokerJvmOf(cacheDir);
        expect(java).toBeGreaterThan(0);
        // A broker that hangs (a stopped JVM, a long GC pause): its clients' requests wait out their timeouts.
        process.kill(java, 'SIGSTOP');
        // Its consumers' fetches are then waiting on it, as they would be on a broker that hangs under load.
        await new Promise((r) => setTimeout(r, 3000));
        const stoppingAt = Date.now();
        app.child.kill('SIGTERM');
        const code = await app.exited;
        // The process ends by itself (not killed by a signal), inside the 30 s limit, and its JVM goes with it.
        expect(code).not.toBeNull();
        expect(Date.now() - stoppingAt).toBeLessThan(40000);
        expect(await gone(java, 15000)).toBe(true);
      } finally {
        app.child.kill('SIGKILL');
        if (java > 0 && alive(java)) {
          process.kill(java, 'SIGKILL');
          await gone(java, 10000);
        }
        rmSync(cacheDir, { recursive: true, force: true });
      }
    },
    300000,
  );

  withJava('storage is formatted even when the random cluster id starts with "-"', () => {
    const dir = mkdtempSync(join(tmpdir(), 'hookstream-format-'));
    try {
      const props = join(dir, 'server.properties');
      writeFileSync(props, serverProperties(dir, 19999, 19998));
      formatStorage(resolveBrokerJars(loadConfig({}).cacheDir), dir, props, '-AbCdEfGhIjKlMnOpQrStU');
      expect(readFileSync(join(dir, 'logs', 'meta.properties'), 'utf8')).toContain('cluster.id=-AbCdEfGhIjKlMnOpQrStU');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  test('each role stops cleanly on SIGTERM, with exit code 0', async () => {
    const prefix = uniquePrefix('lifecycle');
    for (const role of ['api', 'runner', 'bridge', 'all']) {
      const child = await startChildService(role, prefix);
      expect(await child.kill('SIGTERM')).toBe(0);
    }
  }, 120000);

  withJava('with Java but no Maven and no cached jars, the message names Maven and KAFKA_BROKERS', async () => {
    const cacheDir = mkdtempSync(join(tmpdir(), 'hookstream-nomvn-'));
    const bin = mkdtempSync(join(tmpdir(), 'hookstream-bin-'));
    const java = spawnSync('bash', ['-c', 'command -v java'], { encoding: 'utf8' }).stdout.trim();
    symlinkSync(realpathSync(java), join(bin, 'java'));
    const app = run([join(DIST, 'main.js')], { PATH: bin, HOOKSTREAM_CACHE_DIR: cacheDir, PORT: '0' });
    expect(await app.exited).toBe(1);
    expect(app.output()).toMatch(/no `mvn` is on PATH[\s\S]*Maven[\s\S]*KAFKA_BROKERS/);
    rmSync(cacheDir, { recursive: true, force: true });
    rmSync(bin, { recursive: true, force: true });
  });

  test('without Java the embedded default fails with one clear message naming what to install or set', async () => {
    const cacheDir = mkdtempSync(join(tmpdir(), 'hookstream-nojava-'));
    const app = run([join(DIST, 'main.js')], { PATH: '/nonexistent', HOOKSTREAM_CACHE_DIR: cacheDir, PORT: '0' });
    expect(await app.exited).toBe(1);
    expect(app.output()).toMatch(/No `java` found on PATH[\s\S]*Java 17\+ and Maven[\s\S]*KAFKA_BROKERS/);
    expect(app.output()).not.toMatch(/\n\s+at /);
    rmSync(cacheDir, { recursive: true, force: true });
  });

  test('EMBEDDED_KAFKA=false (the image) without KAFKA_BROKERS says to set it, and nothing of Java', async () => {
    const cacheDir = mkdtempSync(join(tmpdir(), 'hookstream-noembedded-'));
    const app = run([join(DIST, 'main.js'), 'api'], {
      EMBEDDED_KAFKA: 'false',
      HOOKSTREAM_CACHE_DIR: cacheDir,
      PORT: '0',
    });
    expect(await app.exited).toBe(1);
    expect(app.output()).toContain('set KAFKA_BROKERS=host:port');
    expect(app.output()).not.toMatch(/java|maven|\n\s+at /i);
    rmSync(cacheDir, { recursive: true, force: true });
  });
});
