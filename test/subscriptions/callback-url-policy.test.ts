import { checkCallbackUrl, isInternalAddress } from '../../src/subscriptions/callback-url-policy';

/** A fixed resolver for names, so the public case needs no network; `localhost` uses the system's. */
const lookup = async (host: string) => {
  const table: Record<string, string[]> = { 'hooks.example.com': ['93.184.215.14'], 'rebind.example.com': ['93.184.215.14', '10.0.0.5'], 'v6.example.com': ['2606:4700::6810:85e5'] };
  if (table[host]) return table[host];
  throw new Error('ENOTFOUND');
};

const REFUSED = [
  'http://127.0.0.1/hook', 'http://127.1/hook', 'http://2130706433/hook', 'http://0177.0.0.1/hook', 'http://0x7f.0.0.1/hook',
  'http://[::1]/hook', 'http://[::ffff:127.0.0.1]/hook', 'http://[::ffff:7f00:1]/hook', 'http://10.1.2.3/hook', 'http://172.16.0.1/hook',
  'http://192.168.1.1/hook', 'http://169.254.169.254/latest/meta-data', 'http://[fe80::1]/hook', 'http://[fd00::1]/hook',
  'http://224.0.0.1/hook', 'http://[ff02::1]/hook', 'http://0.0.0.0/hook', 'http://100.64.0.1/hook', 'http://localhost:8080/hook',
  'http://rebind.example.com/hook', 'http://no-such-host.invalid/hook',
];
const MALFORMED = ['ftp://hooks.example.com/x', 'hooks.example.com/x', '/relative', 'http://user:pw@hooks.example.com/x', 'javascript:alert(1)', 'file:///etc/passwd'];
const ALLOWED = ['https://hooks.example.com/x', 'http://93.184.215.14:8080/x', 'https://v6.example.com/hook', 'https://[2606:4700::6810:85e5]/hook'];

describe('callback URL policy', () => {
  test.each(REFUSED)('refuses %s, an internal target, by default', async (url) => {
    const verdict = await checkCallbackUrl(url, { allowPrivate: false, lookup: (h) => (h === 'localhost' ? Promise.resolve(['127.0.0.1']) : lookup(h)) });
    expect(verdict.ok).toBe(false);
  });

  test.each(MALFORMED)('refuses %s: not an absolute http(s) URL without credentials', async (url) => {
    expect((await checkCallbackUrl(url, { allowPrivate: true, lookup })).ok).toBe(false);
  });

  test.each(ALLOWED)('accepts %s, a public target', async (url) => {
    expect((await checkCallbackUrl(url, { allowPrivate: false, lookup })).ok).toBe(true);
  });

  test('the system resolver resolves localhost to loopback, which is refused', async () => {
    expect(await checkCallbackUrl('http://localhost/hook', { allowPrivate: false })).toMatchObject({ ok: false, reason: expect.stringMatching(/internal address/) });
  });

  test('a name whose lookup never answers is refused instead of holding the request', async () => {
    const never = () => new Promise<string[]>(() => undefined);
    expect(await checkCallbackUrl('https://stalls.example.com/x', { allowPrivate: false, lookup: never })).toMatchObject({ ok: false, reason: expect.stringMatching(/does not resolve/) });
  });

  test('CALLBACK_ALLOW_PRIVATE lets loopback and private targets through', async () => {
    for (const url of ['http://127.0.0.1:9/x', 'http://[::1]:9/x', 'http://10.0.0.1/x']) expect((await checkCallbackUrl(url, { allowPrivate: true })).ok).toBe(true);
  });

  test('public addresses are not internal; mapped IPv6 forms are judged by their IPv4 address', () => {
    expect(isInternalAddress('8.8.8.8')).toBe(false);
    expect(isInternalAddress('::ffff:8.8.8.8')).toBe(false);
    expect(isInternalAddress('::ffff:10.0.0.1')).toBe(true);
    expect(isInternalAddress('not an ip')).toBe(true);
  });
});
