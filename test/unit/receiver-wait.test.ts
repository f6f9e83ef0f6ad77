import { Receiver } from '../support/receiver';

/* The integration tests' callback receiver: its wait is woken by each arrival, and a timeout says what was missing. */
describe('Receiver.waitFor', () => {
  let receiver: Receiver;
  beforeEach(async () => {
    receiver = await new Receiver().start();
  });
  afterEach(() => receiver.stop());

  const post = (body: unknown) => fetch(`${receiver.url}/hook`, { method: 'POST', body: JSON.stringify(body) });

  test('resolves once the requests asked for have arrived, with them', async () => {
    const waiting = receiver.waitFor(2, 10000);
    await post({ n: 1 });
    await post({ n: 2 });
    expect((await waiting).map((r) => r.json)).toEqual([{ n: 1 }, { n: 2 }]);
  });

  test('fails on its timeout, saying how many of how many came', async () => {
    await post({ n: 1 });
    await expect(receiver.waitFor(3, 50)).rejects.toThrow(/1 of 3 requests arrived in 50 ms/);
  });
});
