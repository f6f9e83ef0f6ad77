import type { StateView } from '../kafka/types';
import { isFinal, isSnapshot, type TaskRecord } from './task-snapshot';

/**
 * Requests waiting for tasks to end (`Prefer: wait`): one listener on the
 * tasks view wakes exactly the waiters of the task whose snapshot became
 * final or was tombstoned. Nothing polls, and a task no one waits for costs
 * nothing.
 */
export class FinalWaiters {
  private readonly waiters = new Map<string, Set<() => void>>();

  constructor(view: StateView<TaskRecord>) {
    view.onChange((key, value) => {
      const waiting = this.waiters.get(key);
      if (!waiting) return;
      if (value !== undefined && !(isSnapshot(value) && isFinal(value.status))) return;
      for (const wake of [...waiting]) wake();
    });
  }

  /** Resolves when the task ends or is forgotten, after timeoutMs, or when `signal` aborts. */
  wait(taskId: string, timeoutMs: number, signal?: AbortSignal): Promise<void> {
    return new Promise((resolve) => {
      const set = this.waiters.get(taskId) ?? new Set<() => void>();
      this.waiters.set(taskId, set);
      const timer = setTimeout(() => wake(), timeoutMs);
      const wake = () => {
        clearTimeout(timer);
        signal?.removeEventListener('abort', wake);
        set.delete(wake);
        if (set.size === 0 && this.waiters.get(taskId) === set) this.waiters.delete(taskId);
        resolve();
      };
      set.add(wake);
      if (signal?.aborted) wake();
      else signal?.addEventListener('abort', wake, { once: true });
    });
  }

  /** requests waiting now, for tests and operators */
  get size(): number {
    let n = 0;
    for (const s of this.waiters.values()) n += s.size;
    return n;
  }
}
