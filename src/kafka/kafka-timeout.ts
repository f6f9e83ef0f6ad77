import { KafkaUnavailableError } from './types';

/** A Kafka call that has not answered within `ms` is taken as Kafka being unavailable (a 503 for a request). */
export function withKafkaTimeout<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new KafkaUnavailableError(`${what}: no answer within ${ms} ms`)), ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

/** Waits for `promise` at most `ms`, then goes on either way: a shutdown step that must not hold the exit. */
export async function atMost(promise: Promise<unknown>, ms: number): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  const elapsed = new Promise<void>((resolve) => {
    timer = setTimeout(resolve, ms);
    timer.unref();
  });
  await Promise.race([
    promise.then(
      () => undefined,
      () => undefined,
    ),
    elapsed,
  ]);
  clearTimeout(timer);
}
