import { existsSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { chromium, type Browser } from 'playwright-core';
import type { RunningService } from '../../src/service';
import { startTestService, uniquePrefix } from '../support/test-service';

/*
 * GET /docs in a real headless Chromium (Debian's `chromium`, driven by playwright-core): the reference renders the
 * routes from the OpenAPI document, links the AsyncAPI document and the problem catalogue, and every request the
 * page makes goes to the service itself. A screenshot is kept in test-output/ (git-ignored).
 */
const CHROMIUM = ['/usr/bin/chromium', '/usr/bin/chromium-browser'].find((path) => existsSync(path));
const OUTPUT = join(__dirname, '..', '..', 'test-output');

if (!CHROMIUM) {
  // CI installs it (.ci/run); a machine without it says why these tests did not run.
  console.warn('SKIPPED test/docs/docs-page.test.ts: no Chromium at /usr/bin/chromium (apt-get install chromium)');
}
const describeWithChromium = CHROMIUM ? describe : describe.skip;

describeWithChromium('GET /docs in headless Chromium', () => {
  let service: RunningService;
  let browser: Browser;

  beforeAll(async () => {
    service = await startTestService(uniquePrefix('docs-page'), { role: 'api' });
    // --no-sandbox: CI runs as root, where Chromium's sandbox cannot start.
    browser = await chromium.launch({ executablePath: CHROMIUM, headless: true, args: ['--no-sandbox'] });
  });
  afterAll(async () => {
    await browser?.close();
    await service?.stop();
  });

  test('renders every route, links the AsyncAPI document and problem catalogue, asks no other host', async () => {
    const origin = new URL(service.url).origin;
    const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
    const requested: string[] = [];
    const complaints: string[] = [];
    page.on('request', (request) => requested.push(request.url()));
    page.on('console', (message) => {
      if (message.type() === 'error') complaints.push(message.text());
    });
    page.on('pageerror', (error) => complaints.push(error.message));

    const res = await page.goto(`${origin}/docs`, { waitUntil: 'networkidle' });
    expect(res?.status()).toBe(200);
    await page.waitForSelector('.opblock-summary-path', { timeout: 30000 });
    const paths = await page.locator('.opblock-summary-path').allInnerTexts();
    const shown = new Set(paths.map((p) => p.replace(/\u200b/g, '').trim()));
    for (const path of [
      '/tasks',
      '/tasks/{taskId}',
      '/tasks/{taskId}/events',
      '/subscriptions',
      '/orders',
      '/orders/{id}',
      '/task-types',
      '/health/ready',
      '/metrics',
      '/asyncapi.json',
      '/docs/problems',
    ]) {
      expect({ path, shown: shown.has(path) }).toEqual({ path, shown: true });
    }
    mkdirSync(OUTPUT, { recursive: true });
    await page.screenshot({ path: join(OUTPUT, 'docs-page-top.png') });
    expect(await page.locator('a[href="/asyncapi.json"]').count()).toBeGreaterThan(0);
    expect(await page.locator('a[href="/docs/problems"]').count()).toBeGreaterThan(0);

    // An operation opens to its parameters, request body and answers.
    await page.locator('#operations-tasks-submitTask .opblock-summary').click();
    await page.waitForSelector('#operations-tasks-submitTask .responses-table');
    const submit = await page.locator('#operations-tasks-submitTask').innerText();
    for (const text of ['Idempotency-Key', 'Request body', '202', 'application/problem+json']) {
      expect({ text, shown: submit.toLowerCase().includes(text.toLowerCase()) }).toEqual({ text, shown: true });
    }

    await page.screenshot({ path: join(OUTPUT, 'docs-page.png'), fullPage: true });

    expect(requested.length).toBeGreaterThan(3);
    const elsewhere = requested.filter((url) => !url.startsWith('data:') && new URL(url).origin !== origin);
    expect(elsewhere).toEqual([]);
    // A Content-Security-Policy refusal would be logged here, as would a script error.
    expect(complaints).toEqual([]);
    await page.close();
  });
});
