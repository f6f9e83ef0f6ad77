import { FakeLog, request, runner, startedBefore, topics } from './runner-fakes';

/*
 * A client's request keyed with a UUID in upper case names its task in lower case, as a path does; a task that a
 * runner from before that change accepted under the upper-case key keeps its name, so it ends and is not run twice.
 */
const UPPER = '0193A1B2-C3D4-4E5F-8A9B-0C1D2E3F4A5B';
const lower = UPPER.toLowerCase();
const eventKeys = (log: FakeLog) => new Set(log.records.filter((r) => r.topic === topics.taskEvents).map((r) => r.key));

test('a new task keyed with a UUID in upper case is run and written under the lower-case id', async () => {
  const log = new FakeLog();
  const handle = await runner(log);
  await handle(request(UPPER, 0), new AbortController().signal);
  expect(log.finals(lower)).toEqual(['task.succeeded']);
  expect(eventKeys(log)).toEqual(new Set([lower]));
});

test('a task under way that was accepted under the upper-case key ends under that key, once', async () => {
  const log = new FakeLog();
  startedBefore(log, UPPER, 100);
  const handle = await runner(log);
  await handle(request(UPPER, 0), new AbortController().signal);
  expect(log.finals(UPPER)).toEqual(['task.succeeded']);
  expect(eventKeys(log)).toEqual(new Set([UPPER]));
  expect(log.view.get(lower)).toBeUndefined();
});
