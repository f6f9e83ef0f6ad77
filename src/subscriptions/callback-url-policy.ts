import { lookup as dnsLookup, type LookupAddress } from 'node:dns';
import { BlockList, isIP } from 'node:net';
import { promisify } from 'node:util';

/*
 * Where callbacks may go. Unless CALLBACK_ALLOW_PRIVATE is set, any address
 * that is loopback, private, link-local, multicast, shared, documentation,
 * reserved or otherwise not on the public internet is refused, both when the
 * subscription is made and, through the connection's own DNS lookup, when
 * each callback is sent (a name that resolves elsewhere later is caught too).
 */
const blocked = new BlockList();
for (const [net, bits] of [
  ['0.0.0.0', 8], ['10.0.0.0', 8], ['100.64.0.0', 10], ['127.0.0.0', 8], ['169.254.0.0', 16], ['172.16.0.0', 12],
  ['192.0.0.0', 24], ['192.0.2.0', 24], ['192.88.99.0', 24], ['192.168.0.0', 16], ['198.18.0.0', 15], ['198.51.100.0', 24],
  ['203.0.113.0', 24], ['224.0.0.0', 4], ['240.0.0.0', 4],
] as const) blocked.addSubnet(net, bits, 'ipv4');
for (const [net, bits] of [
  ['::', 128], ['::1', 128], ['64:ff9b::', 96], ['64:ff9b:1::', 48], ['100::', 64], ['2001::', 23], ['2001:db8::', 32], ['2002::', 16],
  ['fc00::', 7], ['fe80::', 10], ['fec0::', 10], ['ff00::', 8],
] as const) blocked.addSubnet(net, bits, 'ipv6');

export function isInternalAddress(address: string): boolean {
  const family = isIP(address);
  if (family === 4) return blocked.check(address, 'ipv4');
  if (family !== 6) return true;
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address) ?? /^::(\d+\.\d+\.\d+\.\d+)$/i.exec(address);
  if (mapped) return blocked.check(mapped[1], 'ipv4');
  const hexMapped = /^::ffff:([0-9a-f]{1,4}):([0-9a-f]{1,4})$/i.exec(address);
  if (hexMapped) {
    const n = (parseInt(hexMapped[1], 16) << 16) | parseInt(hexMapped[2], 16);
    return blocked.check([n >>> 24, (n >>> 16) & 255, (n >>> 8) & 255, n & 255].join('.'), 'ipv4');
  }
  return blocked.check(address, 'ipv6');
}

export type Lookup = (host: string) => Promise<string[]>;

const lookupAll = promisify(dnsLookup);
export const systemLookup: Lookup = async (host) =>
  ((await lookupAll(host, { all: true, verbatim: true })) as unknown as LookupAddress[]).map((a) => a.address);

const LOOKUP_TIMEOUT_MS = 3000;

export type UrlVerdict = { ok: true; url: URL } | { ok: false; reason: string };

/** Checks a callback URL as given; the WHATWG parser normalizes decimal, octal and hex IPv4 forms first. */
export async function checkCallbackUrl(raw: string, options: { allowPrivate: boolean; lookup?: Lookup }): Promise<UrlVerdict> {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    return { ok: false, reason: 'is not an absolute URL' };
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') return { ok: false, reason: 'must be http or https' };
  if (url.username || url.password) return { ok: false, reason: 'must not carry credentials' };
  if (!url.hostname) return { ok: false, reason: 'has no host' };
  if (options.allowPrivate) return { ok: true, url };
  const host = url.hostname.replace(/^\[|\]$/g, '');
  let addresses: string[];
  if (isIP(host)) addresses = [host];
  else {
    // A resolver that stalls must not hold the request: a name that does not resolve in time is refused.
    let timer: NodeJS.Timeout | undefined;
    const stalled = new Promise<never>((_, reject) => { timer = setTimeout(() => reject(new Error('timeout')), LOOKUP_TIMEOUT_MS); });
    try {
      addresses = await Promise.race([(options.lookup ?? systemLookup)(host), stalled]);
    } catch {
      return { ok: false, reason: `host ${host} does not resolve` };
    } finally {
      clearTimeout(timer);
    }
  }
  const internal = addresses.find(isInternalAddress);
  if (addresses.length === 0 || internal) return { ok: false, reason: `targets an internal address (${internal ?? 'none'}); set CALLBACK_ALLOW_PRIVATE=true to allow it` };
  return { ok: true, url };
}

/** A `lookup` for outgoing connections that refuses internal addresses at connect time. */
export function guardedLookup(allowPrivate: boolean) {
  return (hostname: string, options: object, callback: (err: NodeJS.ErrnoException | null, address: string | LookupAddress[], family?: number) => void): void => {
    dnsLookup(hostname, { ...options, all: true }, (err, addresses) => {
      if (err) return callback(err, '');
      const list = addresses as LookupAddress[];
      if (!allowPrivate && list.some((a) => isInternalAddress(a.address))) {
        const refused: NodeJS.ErrnoException = new Error(`callback host ${hostname} resolves to an internal address`);
        refused.code = 'ECALLBACKBLOCKED';
        return callback(refused, '');
      }
      const wantsAll = (options as { all?: boolean }).all;
      if (wantsAll) return callback(null, list);
      return callback(null, list[0].address, list[0].family);
    });
  };
}
