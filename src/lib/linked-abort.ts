/**
 * A signal that aborts when any of `sources` does, with the reason of the first, until unlink() is called.
 *
 * Not AbortSignal.any: on Node 20 a signal it returns is kept alive, with its listeners and what they hold, for
 * as long as it has an abort listener and has not aborted. A run that ends normally never aborts its signal, so
 * every finished task stayed in memory (a heap snapshot showed one TaskJournal per task ever run).
 */
export function linkedAbort(sources: AbortSignal[]): { signal: AbortSignal; unlink(): void } {
  const controller = new AbortController();
  const unlinks: (() => void)[] = [];
  for (const source of sources) {
    if (source.aborted) {
      controller.abort(source.reason);
      break;
    }
    const forward = () => controller.abort(source.reason);
    source.addEventListener('abort', forward, { once: true });
    unlinks.push(() => source.removeEventListener('abort', forward));
  }
  return { signal: controller.signal, unlink: () => unlinks.forEach((u) => u()) };
}
