/**
 * Whether `work` settles (resolves, or rejects: `onError` is told) within `ms`. Never rejects, and the timer does not
 * hold the process: a shutdown step that hangs is given up on, and what follows it still runs.
 */
export async function settlesWithin(
  work: Promise<unknown> | undefined,
  ms: number,
  onError: (err: unknown) => void = () => undefined,
): Promise<boolean> {
  if (!work) return true;
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<false>((resolve) => {
    timer = setTimeout(() => resolve(false), ms);
    timer.unref();
  });
  const settled = work.then(
    () => true as const,
    (err: unknown) => {
      onError(err);
      return true as const;
    },
  );
  try {
    return await Promise.race([settled, late]);
  } finally {
    clearTimeout(timer);
  }
}
