import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { PROBLEM_TYPES, problemType, type ProblemKind } from '../../src/problems/problem-types';

describe('the problem-type catalogue', () => {
  const doc = readFileSync(join(__dirname, '../../docs/problems.md'), 'utf8');
  const rows = [...doc.matchAll(/^\| `([^`]+)` \| (\d{3}) \| ([^|]+) \|/gm)].map((m) => ({
    type: m[1],
    status: Number(m[2]),
    title: m[3].trim(),
  }));

  test('docs/problems.md lists exactly the types of the registry, with their status and title', () => {
    const registry = (Object.keys(PROBLEM_TYPES) as ProblemKind[]).map((k) => ({
      type: problemType(k),
      ...PROBLEM_TYPES[k],
    }));
    expect(rows).toEqual(registry);
  });

  test('every type is an absolute URI and names one kind', () => {
    const types = rows.map((r) => r.type);
    expect(new Set(types).size).toBe(types.length);
    for (const t of types) expect(new URL(t).protocol).toBe('https:');
  });
});
