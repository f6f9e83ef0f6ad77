/** Polls `probe` until it returns a value (not undefined), or fails after `timeoutMs`. */
export async function until<T>(probe: () => Promise<T | undefined>, timeoutMs = 20000, intervalMs = 50): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`condition not met in ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, intervalMs));
  }
}
