import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { exampleResources, exampleTaskTypes } from '../../src/examples';
import type { RunningService } from '../../src/service';
import type { TaskType } from '../../src/tasks/task-type';
import { http } from '../support/http';
import { ROOT } from '../support/readme-block';
import { startTestService, uniquePrefix } from '../support/test-service';
import { greeting } from './greeting';
import { invoices } from './invoices';

/*
 * README "Add your own", done as a team would: a resource and a task type, one file each, registered in the lists
 * src/main.ts runs. The README shows these very files (as they would sit in src/examples/), so it cannot drift.
 */

/** The `ts` block between `<!-- name:start -->` and `<!-- name:end -->` in the README. */
function readmeTsBlock(name: string): string {
  const readme = readFileSync(join(ROOT, 'README.md'), 'utf8');
  const pattern = new RegExp(`<!-- ${name}:start -->\\s*\`\`\`ts\\n([\\s\\S]*?)\`\`\`\\s*<!-- ${name}:end -->`);
  return pattern.exec(readme)?.[1] ?? '';
}

/** The file as it reads in src/examples/: imports one folder up instead of from the test folder. */
const asInExamples = (file: string) =>
  readFileSync(join(__dirname, file), 'utf8').replaceAll("from '../../src/", "from '../");

test('the README shows the resource and the task type files that this test registers', () => {
  expect(readmeTsBlock('add-resource')).toBe(asInExamples('invoices.ts'));
  expect(readmeTsBlock('add-task-type')).toBe(asInExamples('greeting.ts'));
  const registration = readmeTsBlock('add-registration');
  expect(registration).toContain('[users, items, orders, invoices]');
  expect(registration).toContain('[countdown, orderReport, greeting]');
});

describe('a resource and a task type added the README way', () => {
  let service: RunningService;

  beforeAll(async () => {
    service = await startTestService(uniquePrefix('own'), {
      registers: { resources: [...exampleResources, invoices], taskTypes: [...exampleTaskTypes, greeting as TaskType] },
    });
  });
  afterAll(() => service.stop());

  test('the resource gets every convention: creation, validation, links, embedding, the root', async () => {
    const created = await http(service.url, '/invoices', {
      body: { amount: 12.5, currency: 'EUR', order: 'o-own-1' },
    });
    // The relation must name an existing order: create one first, then the invoice.
    expect(created.status).toBe(400);
    const order = await http(service.url, '/orders', { body: { orderNumber: 7, itemCount: 1, status: 'open' } });
    expect(order.status).toBe(201);
    const invoice = await http(service.url, '/invoices', {
      body: { amount: 12.5, currency: 'EUR', order: order.body._links.self.href },
    });
    expect(invoice.status).toBe(201);
    expect(invoice.body._links.order).toEqual({ href: order.body._links.self.href });
    const read = await http(service.url, `${invoice.body._links.self.href}?embedded=order&fields=amount,_embedded`);
    expect(read.body).toEqual({ amount: 12.5, _embedded: { order: expect.objectContaining({ orderNumber: 7 }) } });
    const bad = await http(service.url, '/invoices', {
      body: { amount: 0, currency: 'euro', order: order.body._links.self.href },
    });
    expect(bad.status).toBe(400);
    expect(bad.body.errors.map((e: { instance: string }) => e.instance).sort()).toEqual(['/amount', '/currency']);
    const root = await http(service.url, '/', { key: null });
    expect(JSON.stringify(root.body._links)).toContain('/invoices');
  });

  test('the task type is listed, validated and run to its result', async () => {
    const types = await http(service.url, '/task-types/greeting', { key: null });
    expect(types.body).toMatchObject({ name: 'greeting', inputSchema: greeting.inputSchema });
    const invalid = await http(service.url, '/tasks', { body: { type: 'greeting', input: { names: [] } } });
    expect(invalid.status).toBe(400);
    const task = await http(service.url, '/tasks', {
      body: { type: 'greeting', input: { names: ['Ada', 'Grace'] } },
      headers: { prefer: 'wait=30' },
    });
    expect(task.status).toBe(202);
    expect(task.body).toMatchObject({ status: 'succeeded', result: { greetings: ['Hello, Ada!', 'Hello, Grace!'] } });
  });
});
