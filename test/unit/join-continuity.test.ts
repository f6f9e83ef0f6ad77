import { continuesFrom } from '../../src/kafka/join-continuity';

describe('a join continues the previous one only when nothing could have been another member’s meanwhile', () => {
  test('the first join, and the next generation under the same member id, continue', () => {
    expect(continuesFrom(undefined, { memberId: 'm1', generationId: 4 })).toBe(true);
    expect(continuesFrom({ memberId: 'm1', generationId: 4 }, { memberId: 'm1', generationId: 5 })).toBe(true);
  });

  test('a new member id (dropped by the coordinator) does not', () => {
    expect(continuesFrom({ memberId: 'm1', generationId: 4 }, { memberId: 'm2', generationId: 5 })).toBe(false);
  });

  test('a generation skipped (its assignment never received) does not, also with the partition assigned again', () => {
    expect(continuesFrom({ memberId: 'm1', generationId: 4 }, { memberId: 'm1', generationId: 6 })).toBe(false);
    expect(continuesFrom({ memberId: 'm1', generationId: 4 }, { memberId: 'm1', generationId: 4 })).toBe(false);
  });

  test('without generations (an unpatched kafkajs) only the member id counts', () => {
    expect(continuesFrom({ memberId: 'm1' }, { memberId: 'm1' })).toBe(true);
    expect(continuesFrom({ memberId: 'm1' }, { memberId: 'm2' })).toBe(false);
  });
});
