/** Exponential backoff without jitter for internal retries: base, 2×base, … capped at max. */
export function retryDelayMs(failures: number, baseMs: number, maxMs: number): number {
  return Math.min(maxMs, baseMs * 2 ** Math.max(0, Math.min(30, failures - 1)));
}
