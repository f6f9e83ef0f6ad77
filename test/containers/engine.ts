import { spawn, spawnSync } from 'node:child_process';
import { join } from 'node:path';

/*
 * The container engine as the container tests use it: podman's Docker-compatible API on the
 * socket DOCKER_HOST names (test/containers/run.sh starts it), and the podman CLI beside it
 * for what only the engine's own tool does (healthchecks, a process's host pid).
 */
export const root = join(__dirname, '..', '..');
export const CONTAINERS_CONF = join(__dirname, 'containers.conf');

/** The environment every podman and compose call gets: our containers.conf, and no BuildKit. */
export function engineEnv(extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  return {
    ...process.env,
    CONTAINERS_CONF: process.env.CONTAINERS_CONF ?? CONTAINERS_CONF,
    // Compose v1 builds through the engine's API; the docker CLI's BuildKit would need a daemon.
    COMPOSE_DOCKER_CLI_BUILD: '0',
    DOCKER_BUILDKIT: '0',
    ...extra,
  };
}

const onPath = (cmd: string) => spawnSync('bash', ['-c', `command -v ${cmd}`], { stdio: 'ignore' }).status === 0;

/** Synchronous, so a test file can choose describe or describe.skip when it loads. */
function socketAnswers(dockerHost: string): boolean {
  const socketPath = dockerHost.replace(/^unix:\/\//, '');
  const probe = `require('node:http').get({ socketPath: ${JSON.stringify(socketPath)}, path: '/_ping', timeout: 5000 },
    (r) => process.exit(r.statusCode === 200 ? 0 : 1)).on('error', () => process.exit(1));`;
  return spawnSync(process.execPath, ['-e', probe], { stdio: 'ignore', timeout: 10000 }).status === 0;
}

/**
 * Why the container tests cannot run here, or undefined when they can. run.sh passes its own
 * reason (the engine did not start, the stand-ins could not be built) in
 * HOOKSTREAM_CONTAINERS_SKIP_REASON.
 */
export function skipReason(images: string[]): string | undefined {
  if (process.env.HOOKSTREAM_CONTAINERS_SKIP_REASON) return process.env.HOOKSTREAM_CONTAINERS_SKIP_REASON;
  if (!onPath('podman')) return 'podman is not installed (apt-get install podman runc); see README "Tests"';
  const host = process.env.DOCKER_HOST;
  if (!host?.startsWith('unix://')) return 'DOCKER_HOST names no podman socket: run `npm run test:containers`';
  if (!socketAnswers(host)) return `nothing answers on ${host}: run \`npm run test:containers\``;
  if (!onPath('docker-compose')) return 'docker-compose (Compose v1, Debian) is not installed';
  const missing = images.filter(
    (image) => spawnSync('podman', ['image', 'exists', image], { env: engineEnv(), stdio: 'ignore' }).status !== 0,
  );
  if (missing.length > 0) return `images missing: ${missing.join(', ')} (build-stand-ins.sh builds them)`;
  return undefined;
}

export interface Run {
  status: number | null;
  stdout: string;
  stderr: string;
}

export interface RunOptions {
  env?: NodeJS.ProcessEnv;
  timeoutMs?: number;
}

/** Runs a command to its end (or kills it after timeoutMs); never throws. */
export function run(cmd: string, args: string[], options: RunOptions = {}): Promise<Run> {
  return new Promise((resolve) => {
    const child = spawn(cmd, args, { cwd: root, env: options.env ?? engineEnv(), stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => {
      stdout += d.toString();
    });
    child.stderr.on('data', (d: Buffer) => {
      stderr += d.toString();
    });
    const timer = setTimeout(() => child.kill('SIGKILL'), options.timeoutMs ?? 120000);
    child.on('error', (err) => {
      clearTimeout(timer);
      resolve({ status: null, stdout, stderr: `${stderr}${String(err)}` });
    });
    child.on('close', (status) => {
      clearTimeout(timer);
      resolve({ status, stdout, stderr });
    });
  });
}

/** Like run, but a non-zero exit is an error carrying the command's output. */
export async function must(cmd: string, args: string[], options: RunOptions = {}): Promise<string> {
  const r = await run(cmd, args, options);
  if (r.status !== 0) {
    throw new Error(`${cmd} ${args.join(' ')} exited ${r.status}:\n${(r.stdout + r.stderr).slice(-4000)}`);
  }
  return r.stdout;
}

/** Polls until check returns a value (not undefined), or throws with the last state after timeoutMs. */
export async function until<T>(
  what: string,
  check: () => Promise<T | undefined>,
  timeoutMs: number,
  everyMs = 1000,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  for (;;) {
    try {
      const value = await check();
      if (value !== undefined) return value;
    } catch (err) {
      last = err;
    }
    if (Date.now() > deadline) {
      throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}${last ? `: ${String(last)}` : ''}`);
    }
    await new Promise((r) => setTimeout(r, everyMs));
  }
}
