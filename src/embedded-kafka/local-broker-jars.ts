import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { KAFKA_VERSION } from './kafka-version';

/** What to tell a user whose machine cannot run the embedded broker. */
export class LocalBrokerUnavailableError extends Error {
  /** `prerequisites`: the cause is a missing or unusable Java or Maven, so say what to install. */
  constructor(reason: string, prerequisites = true) {
    super(
      prerequisites
        ? `${reason}\nThe embedded Kafka needs Java 17+ and Maven (Debian/Ubuntu: apt-get install openjdk-17-jre-headless maven), ` +
            'or set KAFKA_BROKERS=host:port to use a Kafka you run yourself.'
        : `${reason}\nOr set KAFKA_BROKERS=host:port to use a Kafka you run yourself.`,
    );
    this.name = 'LocalBrokerUnavailableError';
  }
}

const POM = `<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>hookstream.local</groupId>
  <artifactId>embedded-kafka</artifactId>
  <version>${KAFKA_VERSION}</version>
  <dependencies>
    <dependency><groupId>org.apache.kafka</groupId><artifactId>kafka_2.13</artifactId><version>${KAFKA_VERSION}</version></dependency>
    <!-- kafka_2.13 ${KAFKA_VERSION} depends on slf4j-api 1.7.x: bind it to a simple logger writing to the broker log file. -->
    <dependency><groupId>org.slf4j</groupId><artifactId>slf4j-simple</artifactId><version>1.7.36</version></dependency>
  </dependencies>
</project>
`;

export function javaMajorVersion(): number | undefined {
  const r = spawnSync('java', ['-version'], { encoding: 'utf8' });
  if (r.error || r.status !== 0) return undefined;
  const m = /version "(\d+)(?:\.(\d+))?/.exec(`${r.stderr}${r.stdout}`);
  if (!m) return undefined;
  const major = Number(m[1]);
  return major === 1 ? Number(m[2]) : major;
}

function assertJava(): void {
  const major = javaMajorVersion();
  if (major === undefined) throw new LocalBrokerUnavailableError('No `java` found on PATH.');
  if (major < 17)
    throw new LocalBrokerUnavailableError(`Java ${major} found; Kafka ${KAFKA_VERSION} needs 17 or newer.`);
}

/**
 * Returns the folder holding the broker's jars, resolving them from Maven
 * Central on first use. The folder is swapped in whole, so an interrupted
 * download never leaves a half-filled cache behind.
 */
export function resolveBrokerJars(cacheDir: string): string {
  assertJava();
  const home = join(cacheDir, `kafka-${KAFKA_VERSION}`);
  const lib = join(home, 'lib');
  if (existsSync(join(lib, `kafka_2.13-${KAFKA_VERSION}.jar`))) return lib;
  const mvn = spawnSync('mvn', ['-v'], { encoding: 'utf8' });
  if (mvn.error || mvn.status !== 0) {
    throw new LocalBrokerUnavailableError(
      `Kafka ${KAFKA_VERSION} jars are not cached in ${home} and no \`mvn\` is on PATH to fetch them.`,
    );
  }
  mkdirSync(home, { recursive: true });
  writeFileSync(join(home, 'pom.xml'), POM);
  const staging = join(home, `lib.partial-${process.pid}`);
  rmSync(staging, { recursive: true, force: true });
  const r = spawnSync(
    'mvn',
    ['-q', '-B', 'dependency:copy-dependencies', '-DincludeScope=runtime', `-DoutputDirectory=${staging}`],
    { cwd: home, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] },
  );
  if (r.status !== 0) {
    rmSync(staging, { recursive: true, force: true });
    throw new LocalBrokerUnavailableError(
      `Maven could not resolve org.apache.kafka:kafka_2.13:${KAFKA_VERSION}:\n${(r.stdout + r.stderr).slice(-2000)}`,
    );
  }
  if (!existsSync(lib)) renameSync(staging, lib);
  else rmSync(staging, { recursive: true, force: true });
  return lib;
}
