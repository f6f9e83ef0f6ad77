import { until } from '../support/until';

describe('until', () => {
  test('resolves with the first value the probe returns', async () => {
    let calls = 0;
    expect(await until(async () => ((calls += 1) >= 3 ? calls : undefined), 5000, 1)).toBe(3);
  });

  test('on timeout it fails naming what it waited for', async () => {
    await expect(until(async () => undefined, 30, 5, 'the order to be paid')).rejects.toThrow(
      'until: the order to be paid did not come true in 30 ms',
    );
  });

  test("without a description, the probe's own source names the condition", async () => {
    const paid = false;
    await expect(until(async () => (paid ? true : undefined), 30, 5)).rejects.toThrow(/paid \? true : undefined/);
  });
});
