/**
 * One deadline for a request with several phases (write, then read back): each
 * phase gets what is left, so the whole answers within the bound it was given.
 */
export class Deadline {
  private readonly at: number;

  constructor(timeoutMs: number, now = Date.now()) {
    this.at = now + timeoutMs;
  }

  /** ms left, at least 1 so a phase that starts late still fails by its own timer */
  remaining(): number {
    return Math.max(1, this.at - Date.now());
  }
}
