import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse } from 'yaml';
import { CONFIG_VARIABLES, ROLES } from '../src/config';
import { APACHE_KAFKA_IMAGE } from '../src/embedded-kafka/kafka-version';
import { SHUTDOWN_LIMIT_MS } from '../src/startup/shutdown-limits';

/*
 * What can be checked without a container engine, in every `npm test`. The stack itself runs
 * in `npm run test:containers` (test/containers/compose-stack.container-test.ts).
 */
const root = join(__dirname, '..');
const compose = parse(readFileSync(join(root, 'docker-compose.yml'), 'utf8'), { merge: true });
const dockerfile = readFileSync(join(root, 'Dockerfile'), 'utf8');
const services = compose.services as Record<string, Record<string, unknown>>;
const ours = Object.entries(services).filter(([, s]) => s.build !== undefined);

describe('docker-compose.yml', () => {
  test('Kafka is the pinned Apache Kafka image, in KRaft mode, with a healthcheck', () => {
    expect(services.kafka.image).toBe(APACHE_KAFKA_IMAGE);
    expect((services.kafka.environment as Record<string, unknown>).KAFKA_PROCESS_ROLES).toBe('broker,controller');
    expect(services.kafka.healthcheck).toBeDefined();
  });

  test('api, runner and bridge are built from the Dockerfile and run their role', () => {
    const roles = Object.fromEntries(ours.map(([name, s]) => [name, (s.command as string[])[0]]));
    expect(roles).toMatchObject({ api: 'api', runner: 'runner', bridge: 'bridge', topics: 'topics' });
    for (const [, s] of ours) expect([...ROLES, 'topics']).toContain((s.command as string[])[0]);
  });

  test('api, runner and bridge each have a healthcheck that runs the built healthcheck script', () => {
    for (const name of ['api', 'runner', 'bridge']) {
      expect((services[name].healthcheck as { test: string[] }).test).toEqual([
        'CMD',
        'node',
        'dist/scripts/healthcheck.js',
      ]);
    }
  });

  test('services only set environment variables that src/config.ts reads', () => {
    for (const [, s] of ours) {
      for (const name of Object.keys(s.environment as object)) expect(CONFIG_VARIABLES).toContain(name);
      expect((s.environment as Record<string, string>).KAFKA_BROKERS).toBe('kafka:9092');
    }
  });

  test("the roles get longer to stop than their own shutdown limit: Docker's default 10 s would cut it short", () => {
    const graceMs = (s: Record<string, unknown>) =>
      Number(/^(\d+)s$/.exec(String(s.stop_grace_period))?.[1] ?? 0) * 1000;
    expect(ours.filter(([, s]) => graceMs(s) <= SHUTDOWN_LIMIT_MS).map(([name]) => name)).toEqual([]);
  });

  test("the bridge's PUBLIC_URL follows the api's published port when HOOKSTREAM_API_PORT moves it", () => {
    const published = (services.api.ports as string[])[0];
    expect(published).toContain('${HOOKSTREAM_API_PORT:-3000}');
    expect((services.bridge.environment as Record<string, string>).PUBLIC_URL).toBe(
      'http://localhost:${HOOKSTREAM_API_PORT:-3000}',
    );
  });

  test('the roles wait for the topics, which wait for a healthy Kafka', () => {
    for (const name of ['api', 'runner', 'bridge']) {
      expect(services[name].depends_on).toEqual({ topics: { condition: 'service_completed_successfully' } });
    }
    expect(services.topics.depends_on).toEqual({ kafka: { condition: 'service_healthy' } });
  });

  test('the api publishes its PORT, and the kafka advertised listener names the compose service', () => {
    const port = (services.api.environment as Record<string, string>).PORT;
    expect(services.api.ports).toEqual([`\${HOOKSTREAM_BIND:-127.0.0.1}:\${HOOKSTREAM_API_PORT:-3000}:${port}`]);
    expect(String((services.kafka.environment as Record<string, unknown>).KAFKA_ADVERTISED_LISTENERS)).toContain(
      'PLAINTEXT://kafka:9092',
    );
  });

  test('published ports listen on 127.0.0.1 unless HOOKSTREAM_BIND says otherwise', () => {
    const published = Object.values(services).flatMap((s) => (s.ports as string[] | undefined) ?? []);
    expect(published.length).toBeGreaterThan(0);
    for (const p of published) expect(p).toMatch(/^\$\{HOOKSTREAM_BIND:-127\.0\.0\.1\}:/);
  });

  test('Kafka advertises to your own clients the host port it publishes', () => {
    const env = services.kafka.environment as Record<string, string>;
    const published = (services.kafka.ports as string[])[0];
    const [, hostPort, containerPort] = /^\$\{[^}]*\}:(\$\{[^}]*\}|\d+):(\d+)$/.exec(published) ?? [];
    expect(hostPort).toBe('${HOOKSTREAM_KAFKA_PORT:-29092}');
    expect(env.KAFKA_ADVERTISED_LISTENERS).toContain(`EXTERNAL://localhost:${hostPort}`);
    expect(env.KAFKA_LISTENERS).toContain(`EXTERNAL://:${containerPort}`);
  });

  test('Kafka writes its log where its volume is mounted, so down then up keeps the data', () => {
    const logDirs = (services.kafka.environment as Record<string, string>).KAFKA_LOG_DIRS;
    expect(services.kafka.volumes).toEqual([`kafka-data:${logDirs}`]);
    expect(compose.volumes).toHaveProperty('kafka-data');
  });

  test("no top-level name: Compose v1 (Debian's docker-compose) refuses the file with one", () => {
    expect(compose.name).toBeUndefined();
  });

  test('the Dockerfile is multi-stage, non-root, production-only, and runs files the build emits', () => {
    expect(dockerfile.match(/^FROM /gm)).toHaveLength(2);
    expect(dockerfile).toMatch(/^USER node$/m);
    expect(dockerfile).toContain('npm prune --omit=dev');
    expect(dockerfile).toContain('ENTRYPOINT ["node", "dist/src/main.js"]');
    expect(dockerfile).toContain('"dist/scripts/healthcheck.js"');
    // tsconfig.build.json compiles src/ and scripts/ to dist/ with the same layout.
    expect(existsSync(join(root, 'src/main.ts'))).toBe(true);
    expect(existsSync(join(root, 'scripts/healthcheck.ts'))).toBe(true);
    const build = JSON.parse(readFileSync(join(root, 'tsconfig.build.json'), 'utf8'));
    expect(build.include).toEqual(expect.arrayContaining(['src', 'scripts']));
  });
});
