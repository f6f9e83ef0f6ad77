import { Deadline } from '../lib/deadline';
import type { RecordPosition, StateView } from './types';

/**
 * Read-your-writes under one deadline: the write and the wait for this
 * process's view to apply it share `timeoutMs`, so a request that needs Kafka
 * answers within it whatever phase is slow (DESIGN "One deadline").
 */
export async function writeThenRead(
  view: Pick<StateView<unknown>, 'waitFor'>,
  timeoutMs: number,
  write: (remainingMs: number) => Promise<RecordPosition[]>,
): Promise<RecordPosition[]> {
  const deadline = new Deadline(timeoutMs);
  const positions = await write(deadline.remaining());
  await view.waitFor(positions, deadline.remaining());
  return positions;
}
