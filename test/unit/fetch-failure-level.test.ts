import { fetchFailureLevel } from '../../src/kafka/fetched-records';

/*
 * A reading's fetch failures as an operator's log shows them: a moved leader (or a topic made a moment ago) once is
 * routine and below warn; anything else is a warn, and so is any second failure in a row; a failure that goes on is
 * told every tenth time.
 */
const levels = (type: string | undefined, upTo: number) =>
  Array.from({ length: upTo }, (_, i) => fetchFailureLevel(type, i + 1));
const quiet = (n: number) => Array(n).fill(undefined);

test('a leader that moved is debug once, warn when it fails again, then every tenth time', () => {
  expect(levels('NOT_LEADER_FOR_PARTITION', 10)).toEqual(['debug', 'warn', ...quiet(7), 'warn']);
});

test('any other failure (a connection closed, an unknown error) is a warn at once, again, then every tenth', () => {
  for (const type of [undefined, 'REQUEST_TIMED_OUT']) {
    expect(levels(type, 20)).toEqual(['warn', 'warn', ...quiet(7), 'warn', ...quiet(9), 'warn']);
  }
});

test('a moved leader first, then a broker that went: the second failure is told, whatever its kind', () => {
  expect(fetchFailureLevel('NOT_LEADER_FOR_PARTITION', 1)).toBe('debug');
  expect(fetchFailureLevel(undefined, 2)).toBe('warn');
});
