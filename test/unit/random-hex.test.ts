import { randomHex } from '../../src/lib/random-hex';
import { childOf, newTrace } from '../../src/tracing/trace-context';

describe('randomHex', () => {
  it('gives the asked number of bytes as lowercase hex, never the same twice, across refills of its pool', () => {
    const seen = new Set<string>();
    // 16 + 8 bytes per trace: several pools' worth, so ids straddle the refills.
    for (let i = 0; i < 2000; i += 1) {
      const id = randomHex(16);
      const span = randomHex(8);
      expect(id).toMatch(/^[0-9a-f]{32}$/);
      expect(span).toMatch(/^[0-9a-f]{16}$/);
      seen.add(id);
    }
    expect(seen.size).toBe(2000);
  });

  it('serves a request larger than its pool too', () => {
    expect(randomHex(5000)).toMatch(/^[0-9a-f]{10000}$/);
  });

  it('makes W3C trace and span ids of the right size', () => {
    const t = newTrace();
    expect(t).toEqual({
      traceId: expect.stringMatching(/^[0-9a-f]{32}$/),
      spanId: expect.stringMatching(/^[0-9a-f]{16}$/),
      flags: '01',
    });
    const c = childOf(t);
    expect(c.traceId).toBe(t.traceId);
    expect(c.spanId).not.toBe(t.spanId);
  });
});
