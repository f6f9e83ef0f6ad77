import type { LookupAddress } from 'node:dns';
import { isIP } from 'node:net';
import { checkCallbackUrl, guardedLookup, isInternalAddress } from '../../src/subscriptions/callback-url-policy';

/** A fixed resolver for names, so the public case needs no network; `localhost` uses the system's. */
const lookup = async (host: string) => {
  const table: Record<string, string[]> = {
    'hooks.example.com': ['93.184.215.14'],
    'rebind.example.com': ['93.184.215.14', '10.0.0.5'],
    'v6.example.com': ['2606:4700::6810:85e5'],
    'translated.example.com': ['::ffff:0:7f00:1'],
    'nat64.example.com': ['64:ff9b::a00:5'],
    'sixtofour.example.com': ['2002:a9fe:a9fe::1'],
  };
  if (table[host]) return table[host];
  throw new Error('ENOTFOUND');
};

const REFUSED = [
  'http://127.0.0.1/hook',
  'http://127.1/hook',
  'http://2130706433/hook',
  'http://0177.0.0.1/hook',
  'http://0x7f.0.0.1/hook',
  'http://[::1]/hook',
  'http://[::ffff:127.0.0.1]/hook',
  'http://[::ffff:7f00:1]/hook',
  'http://10.1.2.3/hook',
  'http://172.16.0.1/hook',
  'http://192.168.1.1/hook',
  'http://169.254.169.254/latest/meta-data',
  'http://[fe80::1]/hook',
  'http://[fd00::1]/hook',
  'http://224.0.0.1/hook',
  'http://[ff02::1]/hook',
  'http://0.0.0.0/hook',
  'http://100.64.0.1/hook',
  'http://localhost:8080/hook',
  'http://rebind.example.com/hook',
  'http://no-such-host.invalid/hook',
];
const MALFORMED = [
  'ftp://hooks.example.com/x',
  'hooks.example.com/x',
  '/relative',
  'http://user:pw@hooks.example.com/x',
  'javascript:alert(1)',
  'file:///etc/passwd',
  // The parser would drop these, and the callback would go to another URL than the one given.
  '  http://hooks.example.com/x',
  'http://hooks.example.com/x\t',
  'http://hooks.exa\nmple.com/x',
  // Nothing listens there: every callback would fail.
  'http://93.184.215.14:0/x',
  'https://[2606:4700::6810:85e5]:0/hook',
];
const ALLOWED = [
  'https://hooks.example.com/x',
  'http://93.184.215.14:8080/x',
  'https://v6.example.com/hook',
  'https://[2606:4700::6810:85e5]/hook',
];

describe('callback URL policy', () => {
  test.each(REFUSED)('refuses %s, an internal target, by default', async (url) => {
    const verdict = await checkCallbackUrl(url, {
      allowPrivate: false,
      lookup: (h) => (h === 'localhost' ? Promise.resolve(['127.0.0.1']) : lookup(h)),
    });
    expect(verdict.ok).toBe(false);
  });

  test.each(MALFORMED)('refuses %s: not an absolute http(s) URL to a port, without credentials', async (url) => {
    expect((await checkCallbackUrl(url, { allowPrivate: true, lookup })).ok).toBe(false);
  });

  test.each(ALLOWED)('accepts %s, a public target', async (url) => {
    expect((await checkCallbackUrl(url, { allowPrivate: false, lookup })).ok).toBe(true);
  });

  test('the system resolver resolves localhost to loopback, which is refused', async () => {
    expect(await checkCallbackUrl('http://localhost/hook', { allowPrivate: false })).toMatchObject({
      ok: false,
      reason: expect.stringMatching(/internal address/),
    });
  });

  test('a name whose lookup never answers is not held on to: after 3 s it is unchecked (transient), not judged', async () => {
    const never = () => new Promise<string[]>(() => undefined);
    expect(
      await checkCallbackUrl('https://stalls.example.com/x', { allowPrivate: false, lookup: never }),
    ).toMatchObject({ ok: false, transient: true, reason: expect.stringMatching(/could not be resolved for now/) });
  });

  test('a resolver failing for a moment (EAI_AGAIN) leaves the URL unchecked; a name that does not exist is refused', async () => {
    const failing = (code: string) => () => Promise.reject(Object.assign(new Error(code), { code }));
    const url = 'https://flaky.example.com/x';
    expect(await checkCallbackUrl(url, { allowPrivate: false, lookup: failing('EAI_AGAIN') })).toMatchObject({
      ok: false,
      transient: true,
    });
    const missing = await checkCallbackUrl(url, { allowPrivate: false, lookup: failing('ENOTFOUND') });
    expect(missing).toMatchObject({ ok: false, reason: expect.stringMatching(/does not resolve/) });
    expect(missing).not.toHaveProperty('transient');
  });

  test('CALLBACK_ALLOW_PRIVATE lets loopback and private targets through', async () => {
    for (const url of ['http://127.0.0.1:9/x', 'http://[::1]:9/x', 'http://10.0.0.1/x'])
      expect((await checkCallbackUrl(url, { allowPrivate: true })).ok).toBe(true);
  });

  test('public addresses are not internal; mapped IPv6 forms are judged by their IPv4 address', () => {
    expect(isInternalAddress('8.8.8.8')).toBe(false);
    expect(isInternalAddress('::ffff:8.8.8.8')).toBe(false);
    expect(isInternalAddress('::ffff:10.0.0.1')).toBe(true);
    expect(isInternalAddress('not an ip')).toBe(true);
  });
});

/*
 * Every IPv6 form that embeds an IPv4 address is judged by that address. The
 * URL parser rewrites `[::127.0.0.1]` as `[::7f00:1]`, so both spellings are here.
 */
const EMBEDDED_INTERNAL = [
  'http://[::127.0.0.1]/hook',
  'http://[::7f00:1]/hook',
  'http://[::10.0.0.1]/hook',
  'http://[::169.254.169.254]/hook',
  'http://[::ffff:0:127.0.0.1]/hook',
  'http://[::ffff:0:7f00:1]/hook',
  'http://[::ffff:0:192.168.0.1]/hook',
  'http://[::ffff:169.254.169.254]/hook',
  'http://[0:0:0:0:0:ffff:127.0.0.1]/hook',
  'http://[64:ff9b::127.0.0.1]/hook',
  'http://[64:ff9b::a9fe:a9fe]/hook',
  'http://[64:ff9b::10.1.2.3]/hook',
  'http://[2002:7f00:1::1]/hook',
  'http://[2002:a00:1::]/hook',
  'http://[2002:c0a8:101:1::5]/hook',
  'http://translated.example.com/hook',
  'http://nat64.example.com/hook',
  'http://sixtofour.example.com/hook',
];
/** Not judged by an embedded address: refused as a whole (Teredo, local-use NAT64, and other non-global IPv6). */
const OTHER_IPV6_INTERNAL = [
  'http://[2001:0:4136:e378:8000:63bf:3fff:fdd2]/hook',
  'http://[2001::1]/hook',
  'http://[64:ff9b:1::a00:1]/hook',
  'http://[::]/hook',
  'http://[100::1]/hook',
  'http://[2001:db8::1]/hook',
  'http://[5f00::1]/hook',
  'http://[4000::1]/hook',
  'http://[fec0::1]/hook',
];
const EMBEDDED_PUBLIC = [
  'http://[::ffff:8.8.8.8]/hook',
  'http://[64:ff9b::8.8.8.8]/hook',
  'http://[2002:808:808::1]/hook',
];
const REFUSED_AS_INTERNAL = { ok: false, reason: expect.stringMatching(/internal address/) };

/** What the connection's own lookup says about a host: refused, or the addresses it connects to. */
function connectTimeVerdict(host: string): Promise<'refused' | string[]> {
  return new Promise((resolve, reject) => {
    guardedLookup(false)(host, { all: true }, (err, addresses) => {
      if (err?.code === 'ECALLBACKBLOCKED') resolve('refused');
      else if (err) reject(err);
      else resolve((addresses as LookupAddress[]).map((a) => a.address));
    });
  });
}

describe('IPv6 forms that embed an IPv4 address', () => {
  const policy = { allowPrivate: false, lookup };

  test.each(EMBEDDED_INTERNAL)('refuses %s: the IPv4 address it embeds is internal', async (url) => {
    expect(await checkCallbackUrl(url, policy)).toMatchObject(REFUSED_AS_INTERNAL);
  });

  test.each(OTHER_IPV6_INTERNAL)('refuses %s: not global unicast', async (url) => {
    expect(await checkCallbackUrl(url, policy)).toMatchObject(REFUSED_AS_INTERNAL);
  });

  test.each(EMBEDDED_PUBLIC)('accepts %s: the IPv4 address it embeds is public', async (url) => {
    expect((await checkCallbackUrl(url, policy)).ok).toBe(true);
  });

  test('CALLBACK_ALLOW_PRIVATE lets the embedded loopback forms through', async () => {
    const urls = ['http://[::127.0.0.1]:9/x', 'http://[::ffff:0:127.0.0.1]:9/x', 'http://[64:ff9b::127.0.0.1]/x'];
    for (const url of urls) {
      expect((await checkCallbackUrl(url, { allowPrivate: true })).ok).toBe(true);
    }
  });

  test('the connect-time lookup judges every literal exactly as the subscribe-time check does', async () => {
    const literals = [...EMBEDDED_INTERNAL, ...OTHER_IPV6_INTERNAL, ...EMBEDDED_PUBLIC, ...REFUSED, ...ALLOWED]
      .map((u) => new URL(u).hostname.replace(/^\[|\]$/g, ''))
      .filter((h) => isIP(h) !== 0);
    expect(literals.length).toBeGreaterThan(30);
    for (const host of literals) {
      const url = `http://${host.includes(':') ? `[${host}]` : host}/x`;
      const subscribeTime = (await checkCallbackUrl(url, { allowPrivate: false })).ok;
      const connectTime = await connectTimeVerdict(host);
      expect({ host, refusedAtConnect: connectTime === 'refused' }).toEqual({ host, refusedAtConnect: !subscribeTime });
    }
  });

  test('isInternalAddress reads the embedded address in every spelling', () => {
    expect(isInternalAddress('::ffff:0:127.0.0.1')).toBe(true);
    expect(isInternalAddress('::ffff:0:7f00:1')).toBe(true);
    expect(isInternalAddress('::127.0.0.1')).toBe(true);
    expect(isInternalAddress('64:ff9b::7f00:1')).toBe(true);
    expect(isInternalAddress('2002:7f00:1::')).toBe(true);
    expect(isInternalAddress('::ffff:0:8.8.8.8')).toBe(false);
    expect(isInternalAddress('64:ff9b::808:808')).toBe(false);
    expect(isInternalAddress('2606:4700::6810:85e5')).toBe(false);
    expect(isInternalAddress('fe80::1%eth0')).toBe(true);
  });
});
