/**
 * Polls `probe` until it returns a value (not undefined), or fails after `timeoutMs` with an error that names what it
 * waited for: `what` when given, else the probe's own source, so a timeout in any test says which condition never
 * came true.
 */
export async function until<T>(
  probe: () => Promise<T | undefined>,
  timeoutMs = 20000,
  intervalMs = 50,
  what?: string,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value !== undefined) return value;
    if (Date.now() > deadline) {
      throw new Error(`until: ${what ?? describeProbe(probe)} did not come true in ${timeoutMs} ms`);
    }
    await new Promise((r) => setTimeout(r, intervalMs));
  }
}

/** The probe's source on one line, shortened: enough to find it in the test. */
function describeProbe(probe: () => unknown): string {
  const source = probe.toString().replace(/\s+/g, ' ').trim();
  return source.length > 300 ? `${source.slice(0, 297)}...` : source;
}
