/**
 * The places for records handled at once by one group member. kafkajs sends heartbeats only between handler calls,
 * so a record waiting here for a place heartbeats itself every second; a failed heartbeat (a rebalance) gives up the
 * place it waited for and throws, and kafkajs hands the record out again.
 */
export class InFlightSlots {
  private free: number;
  private readonly waiters: (() => void)[] = [];

  constructor(size: number) {
    this.free = size;
  }

  release(): void {
    const next = this.waiters.shift();
    if (next) next();
    else this.free += 1;
  }

  async acquire(heartbeat: () => Promise<void>): Promise<void> {
    if (this.free > 0) {
      this.free -= 1;
      return;
    }
    let granted = false;
    let grant: () => void = () => undefined;
    const got = new Promise<void>((resolve) => {
      grant = () => {
        granted = true;
        resolve();
      };
    });
    this.waiters.push(grant);
    while (!granted) {
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([
        got,
        new Promise((r) => {
          timer = setTimeout(r, 1000);
        }),
      ]);
      clearTimeout(timer);
      if (granted) break;
      try {
        await heartbeat();
      } catch (err) {
        const i = this.waiters.indexOf(grant);
        if (i >= 0) this.waiters.splice(i, 1);
        else if (granted) this.release();
        throw err;
      }
    }
  }
}
