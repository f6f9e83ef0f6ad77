import { Deadline } from '../lib/deadline';
import type { RecordPosition, StateView, WrittenRecord } from './types';

/**
 * Read-your-writes (DESIGN): once Kafka acknowledged the write (its transaction committed), this process's view
 * applies the records itself instead of waiting to read them back, a round trip and a fetch saved on every write. The
 * view keeps each key's order (StateView.applyWritten), so a record read later never takes a key back.
 */
export async function writeThenRead(
  view: Pick<StateView<unknown>, 'applyWritten' | 'waitFor'>,
  timeoutMs: number,
  write: (remainingMs: number) => Promise<WrittenRecord[]>,
): Promise<WrittenRecord[]> {
  const deadline = new Deadline(timeoutMs);
  const written = await write(deadline.remaining());
  // Its reading far behind (stuck), the view does not apply ahead: the write is read back, or answers 503.
  if (!view.applyWritten(written)) await view.waitFor(written, deadline.remaining());
  return written;
}

/**
 * A write and then the view's reading past it, under one deadline (DESIGN "One deadline"): for a writer that must
 * see what others wrote before it, in the same partition (an Idempotency-Key's claim, where the first claim wins).
 */
export async function writeThenCatchUp(
  view: Pick<StateView<unknown>, 'waitFor'>,
  timeoutMs: number,
  write: (remainingMs: number) => Promise<RecordPosition[]>,
): Promise<RecordPosition[]> {
  const deadline = new Deadline(timeoutMs);
  const positions = await write(deadline.remaining());
  await view.waitFor(positions, deadline.remaining());
  return positions;
}
