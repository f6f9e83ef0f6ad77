import { engineEnv, run } from './engine';

/**
 * Runs the healthchecks of one compose project's containers at their own intervals, which is
 * what the engine does by itself elsewhere: podman 4.3 schedules healthchecks with systemd
 * timers, and these machines have no systemd ("unable to get systemd connection to start
 * healthchecks"). Without it every container stays "starting", and compose's
 * `condition: service_healthy` would wait forever. `podman healthcheck run` is podman's own
 * check (the image's or compose's test, timeout, retries, start period); this only says when.
 */
export class HealthTicker {
  private timer: NodeJS.Timeout | undefined;
  private readonly intervals = new Map<string, number>();
  private readonly lastRun = new Map<string, number>();
  private readonly running = new Set<string>();
  private ticking = false;

  constructor(private readonly project: string) {}

  start(): void {
    this.timer = setInterval(() => void this.tick(), 1000);
  }

  stop(): void {
    clearInterval(this.timer);
  }

  private async tick(): Promise<void> {
    if (this.ticking) return;
    this.ticking = true;
    try {
      const label = `label=com.docker.compose.project=${this.project}`;
      const ps = await run('podman', ['ps', '-q', '--no-trunc', '--filter', label]);
      const now = Date.now();
      for (const id of ps.stdout.split('\n').filter(Boolean)) {
        const every = await this.interval(id);
        if (every === 0 || this.running.has(id) || now - (this.lastRun.get(id) ?? 0) < every) continue;
        this.lastRun.set(id, now);
        this.running.add(id);
        void run('podman', ['healthcheck', 'run', id], { env: engineEnv(), timeoutMs: 60000 }).finally(() =>
          this.running.delete(id),
        );
      }
    } finally {
      this.ticking = false;
    }
  }

  /** The container's healthcheck interval in ms; 0 when it has no healthcheck. */
  private async interval(id: string): Promise<number> {
    const known = this.intervals.get(id);
    if (known !== undefined) return known;
    const r = await run('podman', ['inspect', '--format', '{{json .Config.Healthcheck}}', id]);
    let ms = 0;
    try {
      const hc = JSON.parse(r.stdout) as { Test?: string[]; Interval?: number } | null;
      const disabled = !hc?.Test?.length || hc.Test[0] === 'NONE';
      // Interval is in nanoseconds; 30 s is the engine's default when none is set.
      ms = disabled ? 0 : Math.max(1000, Math.round((hc.Interval || 30e9) / 1e6));
    } catch {
      return 0; // gone between ps and inspect: asked again next tick
    }
    this.intervals.set(id, ms);
    return ms;
  }
}
