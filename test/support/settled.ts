import { until } from './until';

/**
 * Like until, but answers whether the condition came true within the bound
 * instead of throwing: a fault test then still reports its counts.
 */
export function settled(probe: () => Promise<true | undefined>, timeoutMs: number, intervalMs = 250): Promise<boolean> {
  return until(probe, timeoutMs, intervalMs).then(
    () => true,
    () => false,
  );
}
