import { createLogger, type Logger } from '../../src/logger';
import { LazyRequestLogger, requestLoggerFactory } from '../../src/http/request-logger';

/** A request's logger is pino's child, bound to the request id, made only when something is logged or asked of it. */
function logger(level: 'warn' | 'info'): { parent: Logger; lines: Record<string, unknown>[] } {
  const lines: Record<string, unknown>[] = [];
  const parent = createLogger(level, 'test', { write: (line: string) => lines.push(JSON.parse(line)) });
  return { parent, lines };
}

test('below the level nothing is made or written; at it, the line carries the binding like a child would', () => {
  const { parent, lines } = logger('warn');
  const made = jest.spyOn(parent, 'child');
  const log = new LazyRequestLogger(parent, { reqId: 'r-1' });
  log.info({ a: 1 }, 'not at warn');
  log.debug('nor this');
  expect(made).not.toHaveBeenCalled();
  expect(lines).toEqual([]);
  log.warn({ kind: 'x' }, 'written');
  log.error('and %s', 'formatted');
  expect(made).toHaveBeenCalledTimes(1);
  expect(lines).toMatchObject([
    { level: 40, reqId: 'r-1', kind: 'x', msg: 'written' },
    { level: 50, reqId: 'r-1', msg: 'and formatted' },
  ]);
});

test("its level is the parent's until it is set; once set, the request logs at its own level", () => {
  const { parent, lines } = logger('warn');
  const log = new LazyRequestLogger(parent, { reqId: 'r-2' });
  expect(log.level).toBe('warn');
  log.level = 'debug';
  expect(log.level).toBe('debug');
  expect(parent.level).toBe('warn');
  log.debug('now written');
  expect(lines).toMatchObject([{ level: 20, reqId: 'r-2', msg: 'now written' }]);
});

test('a child of it carries both bindings', () => {
  const { parent, lines } = logger('info');
  new LazyRequestLogger(parent, { reqId: 'r-3' }).child({ part: 'p' }).info('hello');
  expect(lines).toMatchObject([{ reqId: 'r-3', part: 'p', msg: 'hello' }]);
});

test("a route's own level or serializers get pino's child at once", () => {
  const { parent } = logger('warn');
  expect(requestLoggerFactory(parent, { reqId: 'r-4' }, {})).toBeInstanceOf(LazyRequestLogger);
  const routeLevel = requestLoggerFactory(parent, { reqId: 'r-4' }, { level: 'debug' });
  expect(routeLevel).not.toBeInstanceOf(LazyRequestLogger);
  expect(routeLevel.level).toBe('debug');
});
