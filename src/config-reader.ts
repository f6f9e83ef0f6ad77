/**
 * The environment as config.ts reads it: trimmed values, typed and bounded, every problem collected so a bad start
 * lists them all at once. Only config.ts reads with it (which variables exist, and their defaults, stay there);
 * ConfigError is also what a start throws for a setting found unusable later (an unwritable cache folder).
 */

export class ConfigError extends Error {
  constructor(readonly problems: string[]) {
    super(`invalid configuration:\n  - ${problems.join('\n  - ')}`);
    this.name = 'ConfigError';
  }
}

export type Env = Record<string, string | undefined>;

/** Reads one variable at a time from the environment object loadConfig was given, collecting every problem. */
export class EnvReader {
  readonly problems: string[] = [];
  constructor(private readonly env: Env) {}

  raw(name: string): string | undefined {
    const v = this.env[name];
    return v === undefined || v.trim() === '' ? undefined : v.trim();
  }

  string(name: string, fallback: string, pattern?: RegExp): string {
    const v = this.raw(name) ?? fallback;
    if (pattern && !pattern.test(v)) this.problems.push(`${name}=${JSON.stringify(v)} must match ${pattern}`);
    return v;
  }

  int(name: string, fallback: number, min: number, max: number): number {
    const v = this.raw(name);
    if (v === undefined) return fallback;
    const n = Number(v);
    if (!/^-?\d+$/.test(v) || n < min || n > max) {
      this.problems.push(`${name}=${JSON.stringify(v)} must be an integer from ${min} to ${max}`);
      return fallback;
    }
    return n;
  }

  bool(name: string, fallback: boolean): boolean {
    const v = this.raw(name)?.toLowerCase();
    if (v === undefined) return fallback;
    if (['true', '1', 'yes'].includes(v)) return true;
    if (['false', '0', 'no'].includes(v)) return false;
    this.problems.push(`${name}=${JSON.stringify(v)} must be true or false`);
    return fallback;
  }

  /** The allowed values are lower case; `INFO` means `info`, as most services read it. */
  oneOf<T extends string>(name: string, fallback: T, allowed: readonly T[], override?: string): T {
    const given = override ?? this.raw(name) ?? fallback;
    const v = given.toLowerCase();
    if (!(allowed as readonly string[]).includes(v)) {
      this.problems.push(`${name}=${JSON.stringify(given)} must be one of ${allowed.join(', ')}`);
      return fallback;
    }
    return v as T;
  }
}
