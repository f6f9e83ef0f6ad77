/** Resolves after ms, or rejects with the signal's reason as soon as it aborts. */
export function sleep(ms: number, signal: AbortSignal): Promise<void> {
  if (signal.aborted) return Promise.reject(signal.reason);
  return new Promise((resolve, reject) => {
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal.reason);
    };
    const timer = setTimeout(() => {
      signal.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    signal.addEventListener('abort', onAbort, { once: true });
  });
}

/** Resolves after ms, or at once when the signal aborts; never rejects. For waits that stop on shutdown. */
export function pause(ms: number, signal: AbortSignal): Promise<void> {
  return sleep(Math.max(0, ms), signal).catch(() => undefined);
}

/**
 * Resolves no sooner than ms from now by the monotonic clock. A timer alone can fire early by however long the
 * event loop's turn had run when it was set (its start is the loop's cached time), which a wait that a guarantee
 * rests on must not do.
 */
export async function waitAtLeast(ms: number): Promise<void> {
  const until = performance.now() + ms;
  for (let left = ms; left > 0; left = until - performance.now()) {
    await new Promise((resolve) => setTimeout(resolve, Math.ceil(left)));
  }
}
