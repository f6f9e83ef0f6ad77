import { linkedAbort } from '../../src/lib/linked-abort';

describe('linkedAbort', () => {
  test("aborts when any source aborts, with that source's reason", () => {
    const [a, b] = [new AbortController(), new AbortController()];
    const { signal } = linkedAbort([a.signal, b.signal]);
    expect(signal.aborted).toBe(false);
    b.abort(new Error('b'));
    expect(signal.aborted).toBe(true);
    expect((signal.reason as Error).message).toBe('b');
  });

  test('a source aborted already aborts it at once', () => {
    const a = new AbortController();
    a.abort('early');
    expect(linkedAbort([a.signal, new AbortController().signal]).signal.reason).toBe('early');
  });

  test('after unlink, the sources no longer reach it (and hold no listener of it)', () => {
    const a = new AbortController();
    let listeners = 0;
    const add = a.signal.addEventListener.bind(a.signal);
    const remove = a.signal.removeEventListener.bind(a.signal);
    a.signal.addEventListener = (...args: Parameters<typeof add>) => {
      listeners += 1;
      add(...args);
    };
    a.signal.removeEventListener = (...args: Parameters<typeof remove>) => {
      listeners -= 1;
      remove(...args);
    };
    const { signal, unlink } = linkedAbort([a.signal]);
    expect(listeners).toBe(1);
    unlink();
    expect(listeners).toBe(0);
    a.abort();
    expect(signal.aborted).toBe(false);
  });
});
