import type { RunningService } from '../src/service';
import { hasCommand, readmeBlock, runBash } from './support/readme-block';
import { startTestService, TENANT_A_KEY, uniquePrefix } from './support/test-service';

/** The README's "Long-running operations" block is run as written (bash, curl, jq) against a live service. */
const block = readmeBlock('operations');

let service: RunningService;
beforeAll(async () => {
  service = await startTestService(uniquePrefix('readme-ops'), { role: 'all' });
});
afterAll(() => service.stop());

test("the README's long-running-operation commands do what it says", async () => {
  expect(block).toContain('Idempotency-Key');
  const missing = ['curl', 'jq'].filter((c) => !hasCommand(c));
  if (missing.length > 0) throw new Error(`the README block needs ${missing.join(' and ')} (installed by .ci/run)`);
  const run = await runBash(block, { PATH: process.env.PATH ?? '', HOOKSTREAM: service.url, KEY: TENANT_A_KEY });
  expect({ status: run.status, stderr: run.stderr }).toEqual({ status: 0, stderr: '' });
  const lines = run.stdout.trim().split('\n');
  const progress = (n: number) => Array.from({ length: n }, () => 'event: task.progress');
  expect(lines).toEqual([
    'countdown',
    'order-report',
    '{"status":"succeeded","result":{"steps":3}}',
    'retry: same task',
    'event: task.accepted',
    'event: task.started',
    ...progress(3),
    'event: task.succeeded',
    ...progress(3),
    'event: task.succeeded',
    '["task.accepted","task.started"]',
    '204',
    '404',
  ]);
});
