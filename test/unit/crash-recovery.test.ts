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
    crash: (restart: boolean) =>
      emitter.emit('consumer.crash', { payload: { error: new Error('boom'), groupId: 'g', restart } }),
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
});
