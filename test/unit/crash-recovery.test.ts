import { EventEmitter } from 'node:events';
import { recoverFromFatalCrash, type CrashSource } from '../../src/kafka/crash-recovery';
import { createLogger } from '../../src/logger';
import { capturedLogger } from './fakes';

/** A stand-in for a kafkajs consumer's crash events (the project's own CrashSource interface). */
function crashSource() {
  const emitter = new EventEmitter();
  return {
    events: { CRASH: 'consumer.crash' },
    on: ((event, listener) => emitter.on(event, listener)) as CrashSource['on'],
    crash: (restart: boolean, error: Error = new Error('boom')) =>
      emitter.emit('consumer.crash', { payload: { error, groupId: 'g', restart } }),
  };
}

/*
 * Recovery is scheduled with a timer: jest's fake timers decide when time passes, so "not before the delay" and
 * "never" are facts about the timers scheduled, not waits that hope nothing happens in time.
 */
describe('recovery from consumer crashes', () => {
  beforeEach(() => jest.useFakeTimers());
  afterEach(() => jest.useRealTimers());

  test('a crash kafkajs will not restart from starts a fresh consumer, after the delay', () => {
    const source = crashSource();
    const recover = jest.fn();
    recoverFromFatalCrash(source, createLogger('silent'), 'test', recover, 20);
    source.crash(false);
    expect(recover).not.toHaveBeenCalled();
    jest.advanceTimersByTime(19);
    expect(recover).not.toHaveBeenCalled();
    jest.advanceTimersByTime(1);
    expect(recover).toHaveBeenCalledTimes(1);
  });

  test('a crash kafkajs restarts from by itself is left to kafkajs', () => {
    const source = crashSource();
    const recover = jest.fn();
    recoverFromFatalCrash(source, createLogger('silent'), 'test', recover, 0);
    const timers = jest.getTimerCount();
    source.crash(true);
    expect(jest.getTimerCount()).toBe(timers);
    jest.runAllTimers();
    expect(recover).not.toHaveBeenCalled();
  });

  test('the warning says what happens next, with the error, not that the service crashed', () => {
    const source = crashSource();
    const { logger, lines } = capturedLogger();
    recoverFromFatalCrash(source, logger, 'test', jest.fn(), 20);
    source.crash(true);
    source.crash(false);
    expect(lines.map((l) => l.msg)).toEqual([
      'test consumer stopped on an error (Error); kafkajs restarts it',
      'test consumer stopped on an error (Error); a fresh one starts in 20 ms',
    ]);
    expect(lines.every((l) => (l.err as { stack?: string }).stack?.includes('boom'))).toBe(true);
  });

  test('a coordinator still loading, restarted by kafkajs, is told at debug once a minute; again within it, at warn', () => {
    const source = crashSource();
    const { logger, lines } = capturedLogger('debug');
    recoverFromFatalCrash(source, logger, 'test', jest.fn(), 20);
    // As kafkajs reports it: its retries exceeded, caused by the protocol error.
    const loading = () => {
      const cause = Object.assign(new Error('The coordinator is loading'), { type: 'COORDINATOR_LOAD_IN_PROGRESS' });
      return Object.assign(new Error('retries exceeded', { cause }), { name: 'KafkaJSNumberOfRetriesExceeded' });
    };
    source.crash(true, loading());
    source.crash(true, loading());
    jest.advanceTimersByTime(60000);
    source.crash(true, loading());
    // Not restarted by kafkajs: a fault whatever its cause.
    source.crash(false, loading());
    expect(lines.map((l) => l.level)).toEqual([20, 40, 20, 40]);
    expect(lines.every((l) => l.type === 'COORDINATOR_LOAD_IN_PROGRESS')).toBe(true);
    expect((lines[0].err as { stack?: string }).stack).toContain('retries exceeded');
  });
});
