import type { FastifyBaseLogger } from 'fastify';
import { RepeatedFailures } from '../../src/http/repeated-failures';
import { until } from '../support/until';

/** A logger that keeps what it was given: level, object, message. */
function recording() {
  const lines: { level: string; obj: Record<string, unknown>; msg: string }[] = [];
  const at = (level: string) => (obj: Record<string, unknown>, msg: string) => void lines.push({ level, obj, msg });
  const logger = { warn: at('warn'), debug: at('debug') } as unknown as FastifyBaseLogger;
  return { logger, lines };
}

test('an outage logs one stack per kind of failure and window, and counts the rest in one line', async () => {
  const { logger, lines } = recording();
  const failures = new RepeatedFailures(logger, 100);
  const down = new Error('Kafka is not reachable');
  for (let i = 0; i < 5; i += 1) failures.report(logger, down, 'kafka-unavailable');
  failures.report(logger, new Error('starting'), 'not-ready');
  const warned = () => lines.filter((l) => l.level === 'warn');
  // The first of each kind with its error (and so its stack); the four repeats at debug, each with its error too.
  expect(warned().map((l) => [l.obj.kind, l.obj.err])).toEqual([
    ['kafka-unavailable', down],
    ['not-ready', expect.any(Error)],
  ]);
  expect(lines.filter((l) => l.level === 'debug')).toHaveLength(4);
  const summary = await until(async () => warned().find((l) => l.msg === 'more requests failed the same way'), 5000, 5);
  expect(summary.obj).toMatchObject({ kind: 'kafka-unavailable', more: 4 });
  // A kind that did not repeat has nothing to add; after the window the next failure is logged in full again.
  expect(warned().filter((l) => l.obj.kind === 'not-ready')).toHaveLength(1);
  await until(
    async () => {
      failures.report(logger, down, 'kafka-unavailable');
      return warned().filter((l) => l.obj.err === down).length === 2 ? true : undefined;
    },
    5000,
    20,
  );
  failures.flush();
});

test('at shutdown, what a window counted is logged at once', () => {
  const { logger, lines } = recording();
  const failures = new RepeatedFailures(logger, 60000);
  for (let i = 0; i < 3; i += 1) failures.report(logger, new Error('x'), 'kafka-unavailable');
  failures.flush();
  expect(lines.at(-1)).toMatchObject({ level: 'warn', obj: { kind: 'kafka-unavailable', more: 2 } });
});
