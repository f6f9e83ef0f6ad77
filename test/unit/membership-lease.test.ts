import { MembershipLease } from '../../src/kafka/membership-lease';

const SESSION_MS = 10000;

describe('MembershipLease', () => {
  test('held from a join for half a session from when the join began; a heartbeat renews it from its send', () => {
    const lease = new MembershipLease();
    expect(lease.held(0)).toBe(false);
    lease.joined(1000, SESSION_MS);
    expect(lease.held(1000 + SESSION_MS / 2 - 1)).toBe(true);
    expect(lease.held(1000 + SESSION_MS / 2)).toBe(false);
    lease.heartbeat(4000);
    expect(lease.held(4000 + SESSION_MS / 2 - 1)).toBe(true);
    // An answer to an older heartbeat, told late, does not shorten it.
    lease.heartbeat(2000);
    expect(lease.held(4000 + SESSION_MS / 2 - 1)).toBe(true);
  });

  test('a rebalance ends it until the next join; a heartbeat answered meanwhile does not bring it back', () => {
    const lease = new MembershipLease();
    lease.joined(1000, SESSION_MS);
    lease.lost();
    expect(lease.held(1001)).toBe(false);
    lease.heartbeat(1500);
    expect(lease.held(1501)).toBe(false);
    lease.joined(2000, SESSION_MS);
    expect(lease.held(2001)).toBe(true);
  });

  test('a crash or a replaced member ends it until the next join, whatever heartbeat is answered meanwhile', () => {
    const lease = new MembershipLease();
    lease.joined(1000, SESSION_MS);
    lease.lost();
    expect(lease.held(1001)).toBe(false);
    lease.heartbeat(1001);
    expect(lease.held(1002)).toBe(false);
    lease.joined(1002, SESSION_MS);
    expect(lease.held(1003)).toBe(true);
  });

  test('whenHeld resolves true once a renewal makes it held, false once its signal aborts', async () => {
    const lease = new MembershipLease();
    lease.joined(Date.now() - SESSION_MS, SESSION_MS);
    const renewed = lease.whenHeld(new AbortController().signal);
    const handBack = new AbortController();
    const abandoned = lease.whenHeld(handBack.signal);
    // A renewal that is itself too old leaves both waiting.
    lease.heartbeat(Date.now() - SESSION_MS);
    handBack.abort();
    await expect(abandoned).resolves.toBe(false);
    lease.heartbeat(Date.now());
    await expect(renewed).resolves.toBe(true);
  });

  test('whenHeld answers at once when it is held', async () => {
    const lease = new MembershipLease();
    lease.joined(Date.now(), SESSION_MS);
    await expect(lease.whenHeld(new AbortController().signal)).resolves.toBe(true);
  });
});
