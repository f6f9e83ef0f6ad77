import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { PROBLEM_TYPES, problemType, type ProblemKind } from '../../src/problems/problem-types';
import { call, inMemoryApi } from './in-memory-api';

describe('the problem-type catalogue', () => {
  const doc = readFileSync(join(__dirname, '../../docs/problems.md'), 'utf8');
  // A kind answered with more than one status lists them all: `400, 404`, the first the one it has by default.
  const rows = [...doc.matchAll(/^\| `([^`]+)` \| (\d{3}(?:, \d{3})*) \| ([^|]+) \|/gm)].map((m) => ({
    type: m[1],
    statuses: m[2].split(', ').map(Number),
    title: m[3].trim(),
  }));
  const registry = (Object.keys(PROBLEM_TYPES) as ProblemKind[]).map((k) => {
    const entry: { status: number; title: string; statuses?: readonly number[] } = PROBLEM_TYPES[k];
    return { type: problemType(k), statuses: entry.statuses ?? [entry.status], title: entry.title };
  });

  test('docs/problems.md lists exactly the types of the registry, with their statuses and title', () => {
    expect(rows).toEqual(registry);
  });

  test('a kind answered with several statuses lists each, here and at GET /docs/problems', async () => {
    const partial = problemType('bulk-partially-failed');
    expect(rows.find((r) => r.type === partial)?.statuses).toEqual([400, 404]);
    const api = await inMemoryApi();
    try {
      const served = (await call(api.app, '/docs/problems', { key: null })).body.problems;
      expect(served.find((p: { type: string }) => p.type === partial)).toEqual({
        type: partial,
        status: 400,
        statuses: [400, 404],
        title: 'Bulk operation partially failed',
      });
      const single = served.find((p: { type: string }) => p.type === problemType('not-found'));
      expect(single).toEqual({ type: problemType('not-found'), status: 404, title: 'Not found' });
    } finally {
      await api.app.close();
    }
  });

  test('every type is an absolute URI and names one kind', () => {
    const types = rows.map((r) => r.type);
    expect(new Set(types).size).toBe(types.length);
    for (const t of types) expect(new URL(t).protocol).toBe('https:');
  });
});
