import { spawn, spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { RunningService } from '../src/service';
import { startTestService, TENANT_A_KEY, testBrokers, uniquePrefix } from './support/test-service';

/** The README's walkthrough is run as written (bash, curl, jq, kafkajs, kcat) against a live service. */
const root = join(__dirname, '..');
const readme = readFileSync(join(root, 'README.md'), 'utf8');
const block = /<!-- walkthrough:start -->\s*```sh\n([\s\S]*?)```\s*<!-- walkthrough:end -->/.exec(readme)?.[1] ?? '';
const has = (cmd: string) => spawnSync('bash', ['-c', `command -v ${cmd}`]).status === 0;

let service: RunningService;
beforeAll(async () => {
  service = await startTestService(uniquePrefix('readme'), { role: 'all' });
});
afterAll(() => service.stop());

/** Async on purpose: the service under test runs in this process and must keep answering. */
function bash(script: string, env: Record<string, string>): Promise<{ status: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    // stdin not a socket: bash would otherwise source /etc/bash.bashrc (its rshd heuristic).
    const child = spawn('bash', ['-euo', 'pipefail', '-c', script], { cwd: root, env, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => { stdout += d.toString(); });
    child.stderr.on('data', (d: Buffer) => { stderr += d.toString(); });
    const timer = setTimeout(() => child.kill('SIGKILL'), 60000);
    child.on('exit', (status) => { clearTimeout(timer); resolve({ status, stdout, stderr }); });
  });
}

test('the README walkthrough follows a task to its result', async () => {
  expect(block).toContain('curl');
  const missing = ['curl', 'jq'].filter((c) => !has(c));
  if (missing.length > 0) throw new Error(`the walkthrough needs ${missing.join(' and ')} (installed by .ci/run)`);
  let script = block;
  if (!has('kcat')) {
    console.warn('kcat is not installed here (.ci/run installs it): its walkthrough line is checked only where it is');
    script = script.replace(/^kcat .*$/m, 'echo "kcat: skipped"');
  }
  const run = await bash(script, { PATH: process.env.PATH ?? '', HOOKSTREAM: service.url, KEY: TENANT_A_KEY, KAFKA: testBrokers()[0] });
  expect({ status: run.status, stderr: run.stderr }).toEqual({ status: 0, stderr: '' });
  const lines = run.stdout.trim().split('\n');
  expect(lines[0]).toMatch(/^\d+ task\.accepted \{"input":\{"steps":3,"stepMs":200\}\}$/);
  expect(lines).toContainEqual(expect.stringMatching(/^\d+ task\.succeeded \{"result":\{"steps":3\}\}$/));
  if (has('kcat')) expect(run.stdout).toMatch(/^[\w-]+ \{"event":"task\.succeeded"/m);
  expect(JSON.parse(lines.at(-1) as string)).toEqual({ status: 'succeeded', result: { steps: 3 } });
});
