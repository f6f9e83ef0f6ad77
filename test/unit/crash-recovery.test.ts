import { EventEmitter } from 'node:events';
import { recoverFromFatalCrash, type CrashSource } from '../../src/kafka/crash-recovery';
import { createLogger } from '../../src/logger';

/** A stand-in for a kafkajs consumer's crash events (the project's own CrashSource interface). */
function crashSource() {
  const emitter = new EventEmitter();
  return {
    events: { CRASH: 'consumer.crash' },
    on: ((event, listener) => emitter.on(event, listener)) as CrashSource['on'],
    crash: (restart: boolean) => emitter.emit('consumer.crash', { payload: { error: new Error('boom'), groupId: 'g', restart } }),
  };
}

const settle = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('recovery from consumer crashes', () => {
  test('a crash kafkajs will not restart from starts a fresh consumer, after the delay', async () => {
    const source = crashSource();
    const recover = jest.fn();
    recoverFromFatalCrash(source, createLogger('silent'), 'test', recover, 20);
    source.crash(false);
    expect(recover).not.toHaveBeenCalled();
    await settle(60);
    expect(recover).toHaveBeenCalledTimes(1);
  });

  test('a crash kafkajs restarts from by itself is left to kafkajs', async () => {
    const source = crashSource();
    const recover = jest.fn();
    recoverFromFatalCrash(source, createLogger('silent'), 'test', recover, 0);
    source.crash(true);
    await settle(20);
    expect(recover).not.toHaveBeenCalled();
  });
});
