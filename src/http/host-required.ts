import type { FastifyInstance } from 'fastify';
import fp from 'fastify-plugin';
import { ProblemError } from '../problems/problem-error';
import { addRequestStep } from './convention-hooks';
import { headerValues } from './raw-headers';

/**
 * RFC 9112 §3.2 / RFC 3986 §3.2.2-3.2.3: `uri-host [ ":" port ]`, the host an IP literal in brackets (an IPv6
 * address, with an RFC 6874 zone id, or an IPvFuture) or a reg-name (unreserved, percent-encoded and sub-delims
 * characters; an IPv4 address is one of those), the port digits. No space, path, query or userinfo.
 */
const IPV6 = String.raw`[0-9A-Fa-f:.]+(?:%25[A-Za-z0-9\-._~%]+)?`;
const IPVFUTURE = String.raw`v[0-9A-Fa-f]+\.[A-Za-z0-9\-._~!$&'()*+,;=:]+`;
const IP_LITERAL = String.raw`\[(?:${IPV6}|${IPVFUTURE})\]`;
const REG_NAME = String.raw`[A-Za-z0-9\-._~!$&'()*+,;=%]*`;
const HOST_VALUE = new RegExp(`^(?:${IP_LITERAL}|${REG_NAME})(?::\\d*)?$`);

/**
 * RFC 9112 §3.2: an HTTP/1.1 request without a Host header is a 400, and so is any request with more than one Host
 * line or a Host that is no host (absolute hrefs name the origin a request came to, which it says). Node answers a
 * missing one itself with an empty body unless told not to (app.ts turns requireHostHeader off), and keeps the first
 * of several, so the checks are here, where the answer is a Problem.
 */
export const hostRequiredPlugin = fp(
  async (app: FastifyInstance) => {
    addRequestStep(app, (request) => {
      const { httpVersionMajor, httpVersionMinor } = request.raw;
      // Node's parser reads `HTTP/2.0` (and a line with no version, as 0.9) into an HTTP/1 exchange; RFC 9110
      // §15.6.6 answers a major version the server does not speak with 505.
      if (httpVersionMajor !== 1) {
        const detail = `HTTP/${httpVersionMajor}.${httpVersionMinor} is not spoken here; send HTTP/1.1.`;
        throw new ProblemError('http-version-not-supported', detail);
      }
      const host = request.headers.host;
      // An empty Host is allowed (RFC 9112 §3.2: a target with no authority); only a missing one is refused.
      if (httpVersionMinor === 1 && host === undefined) {
        throw new ProblemError('bad-request', 'An HTTP/1.1 request must carry a Host header.');
      }
      if (host !== undefined && !HOST_VALUE.test(host)) {
        throw new ProblemError('bad-request', 'The Host header is no host[:port] (RFC 9112 §3.2).');
      }
      if (host !== undefined && (headerValues(request.raw.rawHeaders, 'host')?.length ?? 0) > 1) {
        throw new ProblemError('bad-request', 'The request has more than one Host header (RFC 9112 §3.2).');
      }
    });
  },
  { name: 'hookstream-host-required' },
);
