import { lookup as dnsLookup, type LookupAddress } from 'node:dns';
import { isIP } from 'node:net';
import { promisify } from 'node:util';
import ipaddr from 'ipaddr.js';

/*
 * Where callbacks may go. Unless CALLBACK_ALLOW_PRIVATE is set, any address
 * that is loopback, private, link-local, multicast, shared, documentation,
 * reserved or otherwise not on the public internet is refused, both when the
 * subscription is made and, through the connection's own DNS lookup, when
 * each callback is sent (a name that resolves elsewhere later is caught too).
 * ipaddr.js classifies the ranges (IANA special-purpose registries); only
 * `unicast` is public.
 */

/** IPv6 prefixes whose last 32 bits are an IPv4 address that the packet ends up at. */
const EMBEDS_IPV4_IN_LAST_32_BITS = [
  '::/96', // IPv4-compatible (deprecated, RFC 4291): ::a.b.c.d; also :: and ::1, which embed 0.0.0.0/8
  '::ffff:0:0/96', // IPv4-mapped: ::ffff:a.b.c.d
  '::ffff:0:0:0/96', // IPv4-translated (SIIT, RFC 6145): ::ffff:0:a.b.c.d
  '64:ff9b::/96', // NAT64 well-known prefix (RFC 6052)
].map((cidr) => ipaddr.IPv6.parseCIDR(cidr));
/** 6to4 (RFC 3056): 2002:AABB:CCDD::/48 reaches A.B.C.D. */
const SIX_TO_FOUR = ipaddr.IPv6.parseCIDR('2002::/16');
/** IPv6 global unicast; ipaddr.js calls the unassigned rest `unicast` too. */
const GLOBAL_UNICAST = ipaddr.IPv6.parseCIDR('2000::/3');

const fromWords = (high: number, low: number) => new ipaddr.IPv4([high >> 8, high & 255, low >> 8, low & 255]);

/**
 * The IPv4 address an IPv6 address embeds, for the forms that are judged by it.
 * Teredo (2001::/32) is not among them: ipaddr.js ranks it `teredo`, so it is
 * refused outright; its client address is obfuscated and no callback needs it.
 */
function embeddedIPv4(address: ipaddr.IPv6): ipaddr.IPv4 | undefined {
  const p = address.parts;
  if (EMBEDS_IPV4_IN_LAST_32_BITS.some((net) => address.match(net))) return fromWords(p[6], p[7]);
  if (address.match(SIX_TO_FOUR)) return fromWords(p[1], p[2]);
  return undefined;
}

/** True unless the address is a public unicast one; anything unparseable is internal. */
export function isInternalAddress(address: string): boolean {
  let parsed: ipaddr.IPv4 | ipaddr.IPv6;
  try {
    parsed = ipaddr.parse(address);
  } catch {
    return true;
  }
  if (parsed.kind() === 'ipv4') return parsed.range() !== 'unicast';
  const v6 = parsed as ipaddr.IPv6;
  const v4 = embeddedIPv4(v6);
  if (v4) return v4.range() !== 'unicast';
  return v6.range() !== 'unicast' || !v6.match(GLOBAL_UNICAST);
}

export type Lookup = (host: string) => Promise<string[]>;

const lookupAll = promisify(dnsLookup);
export const systemLookup: Lookup = async (host) =>
  ((await lookupAll(host, { all: true, verbatim: true })) as unknown as LookupAddress[]).map((a) => a.address);

const LOOKUP_TIMEOUT_MS = 3000;

/**
 * Lookup failures that say nothing about the name, only about the resolver at this moment: asking again later may
 * answer. A name that does not exist (ENOTFOUND, ENODATA) is an answer, and refused.
 */
const TRANSIENT_LOOKUP_ERRORS = new Set(['EAI_AGAIN', 'ETIMEOUT', 'ESERVFAIL', 'ECONNREFUSED', 'ETIMEDOUT']);

/** `transient`: the URL could not be checked now (a resolver that failed or stalled); it is not judged. */
export type UrlVerdict = { ok: true; url: URL } | { ok: false; reason: string; transient?: boolean };

/** Checks a callback URL as given; the WHATWG parser normalizes decimal, octal and hex IPv4 forms first. */
function hasSpaceOrControl(text: string): boolean {
  for (let i = 0; i < text.length; i += 1) {
    const c = text.charCodeAt(i);
    if (c <= 0x20 || c === 0x7f) return true;
  }
  return false;
}

export async function checkCallbackUrl(
  raw: string,
  options: { allowPrivate: boolean; lookup?: Lookup },
): Promise<UrlVerdict> {
  // The URL parser drops white space and control characters (a tab anywhere, spaces around it): the callback would go
  // to another URL than the one given, where the spec says exactly that one.
  if (hasSpaceOrControl(raw)) return { ok: false, reason: 'is not an absolute URL: it holds white space' };
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    return { ok: false, reason: 'is not an absolute URL' };
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') return { ok: false, reason: 'must be http or https' };
  if (url.username || url.password) return { ok: false, reason: 'must not carry credentials' };
  if (!url.hostname) return { ok: false, reason: 'has no host' };
  // Nothing listens on port 0: every callback would fail, and the subscription deliver nothing, ever.
  if (url.port === '0') return { ok: false, reason: 'names port 0' };
  if (options.allowPrivate) return { ok: true, url };
  const host = url.hostname.replace(/^\[|\]$/g, '');
  let addresses: string[];
  if (isIP(host)) addresses = [host];
  else {
    // A resolver that stalls must not hold the request: after LOOKUP_TIMEOUT_MS the URL is not judged, only unchecked.
    let timer: NodeJS.Timeout | undefined;
    const stalled = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(Object.assign(new Error('timeout'), { code: 'ETIMEOUT' })), LOOKUP_TIMEOUT_MS);
    });
    try {
      addresses = await Promise.race([(options.lookup ?? systemLookup)(host), stalled]);
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code ?? '';
      if (TRANSIENT_LOOKUP_ERRORS.has(code))
        return { ok: false, reason: `host ${host} could not be resolved for now (${code})`, transient: true };
      return { ok: false, reason: `host ${host} does not resolve` };
    } finally {
      clearTimeout(timer);
    }
  }
  const internal = addresses.find(isInternalAddress);
  if (addresses.length === 0 || internal)
    return {
      ok: false,
      reason: `targets an internal address (${internal ?? 'none'}); set CALLBACK_ALLOW_PRIVATE=true to allow it`,
    };
  return { ok: true, url };
}

/** A `lookup` for outgoing connections that refuses internal addresses at connect time. */
export function guardedLookup(allowPrivate: boolean) {
  return (
    hostname: string,
    options: object,
    callback: (err: NodeJS.ErrnoException | null, address: string | LookupAddress[], family?: number) => void,
  ): void => {
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
