import { http } from './http';
import { settled } from './settled';

export const FINAL_STATUSES = ['succeeded', 'failed', 'cancelled'];

/**
 * Polls GET /tasks/{id} for each task not yet final, until all are final or
 * the bound passes; returns the last status seen of each.
 */
export async function awaitFinalStatuses(
  api: string,
  taskIds: string[],
  timeoutMs: number,
): Promise<Map<string, string>> {
  const statuses = new Map<string, string>();
  const open = () => taskIds.filter((id) => !FINAL_STATUSES.includes(statuses.get(id) ?? ''));
  await settled(async () => {
    for (const id of open()) statuses.set(id, (await http(api, `/tasks/${id}`)).body?.status);
    return open().length === 0 ? true : undefined;
  }, timeoutMs);
  return statuses;
}
