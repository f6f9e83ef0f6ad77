import { fetchFailureLevel } from '../../src/kafka/fetched-records';

/*
 * A reading's fetch failures as an operator's log shows them: a moved leader (or a topic made a moment ago) once is
 * routine and below warn; anything else, or the same again, is a warn; a failure that goes on is told every tenth.
 */
const levels = (type: string | undefined, upTo: number) =>
  Array.from({ length: upTo }, (_, i) => fetchFailureLevel(type, i + 1));

test('a leader that moved is debug once, warn when it fails again, then every tenth time', () => {
  expect(levels('NOT_LEADER_FOR_PARTITION', 10)).toEqual(['debug', 'warn', ...Array(7).fill(undefined), 'warn']);
});

test('any other failure (a connection closed, an unknown error) is a warn at once, then every tenth time', () => {
  for (const type of [undefined, 'REQUEST_TIMED_OUT']) {
    expect(levels(type, 20)).toEqual([
      'warn',
      ...Array(8).fill(undefined),
      'warn',
      ...Array(9).fill(undefined),
      'warn',
    ]);
  }
});
