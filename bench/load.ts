/** A closed-loop HTTP load: `concurrency` clients, each sending its next request when the last is answered. */
export interface LoadFigure {
  label: string;
  requests: number;
  concurrency: number;
  perSecond: number;
  p50Ms: number;
  p99Ms: number;
}

export async function closedLoop(
  label: string,
  requests: number,
  concurrency: number,
  send: () => Promise<void>,
): Promise<LoadFigure> {
  const latencies: number[] = [];
  let next = 0;
  const started = performance.now();
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < requests) {
        next += 1;
        const t = performance.now();
        await send();
        latencies.push(performance.now() - t);
      }
    }),
  );
  const seconds = (performance.now() - started) / 1000;
  latencies.sort((a, b) => a - b);
  const at = (q: number) => +latencies[Math.min(latencies.length - 1, Math.floor(q * latencies.length))].toFixed(1);
  return { label, requests, concurrency, perSecond: Math.round(requests / seconds), p50Ms: at(0.5), p99Ms: at(0.99) };
}

/**
 * Several contenders measured in interleaved rounds (a, b, c, a, b, c, ...),
 * so a busy moment of a shared machine hits them alike; each figure is the
 * median round by throughput.
 */
export async function interleaved(
  rounds: number,
  requests: number,
  concurrency: number,
  contenders: { label: string; send: () => Promise<void> }[],
): Promise<LoadFigure[]> {
  const results = contenders.map(() => [] as LoadFigure[]);
  for (const c of contenders) await closedLoop(`${c.label} (warm-up)`, Math.min(200, requests), concurrency, c.send);
  for (let r = 0; r < rounds; r += 1) {
    for (const [i, c] of contenders.entries())
      results[i].push(await closedLoop(c.label, requests, concurrency, c.send));
  }
  return results.map(
    (figures) => [...figures].sort((a, b) => a.perSecond - b.perSecond)[Math.floor(figures.length / 2)],
  );
}

/** A POST with a JSON body that must answer `expected`; the body is read so the connection is reused. */
export function poster(
  url: string,
  body: unknown,
  headers: Record<string, string>,
  expected: number,
): () => Promise<void> {
  const payload = JSON.stringify(body);
  return async () => {
    const res = await fetch(url, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...headers },
      body: payload,
    });
    const text = await res.text();
    if (res.status !== expected) throw new Error(`${url} answered ${res.status}: ${text.slice(0, 300)}`);
  };
}

export function getter(url: string, headers: Record<string, string>): () => Promise<void> {
  return async () => {
    const res = await fetch(url, { headers });
    const text = await res.text();
    if (res.status !== 200) throw new Error(`${url} answered ${res.status}: ${text.slice(0, 300)}`);
  };
}

/** One row of the summary table: a hookstream figure against a baseline measured in the same run. */
export interface Comparison {
  figure: string;
  hookstream: string;
  baseline: string;
  ratio: number | null;
}

export function compare(
  figure: string,
  ours: number,
  theirs: number | undefined,
  unit: string,
  baselineName = '',
): Comparison {
  return {
    figure,
    hookstream: `${ours} ${unit}`,
    baseline: theirs === undefined ? '-' : `${theirs} ${unit} (${baselineName})`,
    ratio: theirs ? +(ours / theirs).toFixed(2) : null,
  };
}

export function printTable(rows: Comparison[]): void {
  const header: Comparison = {
    figure: 'figure',
    hookstream: 'hookstream',
    baseline: 'baseline, same run',
    ratio: null,
  };
  const cells = [header, ...rows].map((r) => [
    r.figure,
    r.hookstream,
    r.baseline,
    r.ratio === null ? (r === header ? 'ratio' : '-') : `${r.ratio}x`,
  ]);
  const widths = cells[0].map((_, i) => Math.max(...cells.map((c) => c[i].length)));
  const line = (c: string[]) => `| ${c.map((v, i) => v.padEnd(widths[i])).join(' | ')} |`;
  console.log(line(cells[0]));
  console.log(`|${widths.map((w) => '-'.repeat(w + 2)).join('|')}|`);
  for (const c of cells.slice(1)) console.log(line(c));
}
