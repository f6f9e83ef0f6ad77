/**
 * What an RFC 3986 path may not hold as it is: anything but unreserved, sub-delims, ':', '@', '/', and a '%' that
 * begins an escape. Whole code points (`u`): a character outside the BMP is encoded as one, not as two halves.
 */
const NOT_IN_PATH = /[^A-Za-z0-9\-._~!$&'()*+,;=:@/%]|%(?![0-9A-Fa-f]{2})/gu;

/**
 * A request path as a Problem's `instance`, which is a URI reference (RFC 9457 §3.1.5): Node hands the path on as the
 * client sent it, and a client may send `<`, `"`, a backslash or a `%` that escapes nothing, which are no part of a
 * URI (and a `"` or `<` copied into a page that shows the Problem is a hazard). Those are percent-encoded; the rest,
 * escapes included, is kept as sent.
 */
export function instanceUri(path: string): string {
  // A lone surrogate has no UTF-8: encodeURIComponent would throw on the error path. It becomes U+FFFD's escape.
  return path.replace(NOT_IN_PATH, (c) => encodeURIComponent(isLoneSurrogate(c) ? '\uFFFD' : c));
}

function isLoneSurrogate(c: string): boolean {
  const code = c.charCodeAt(0);
  return c.length === 1 && code >= 0xd800 && code <= 0xdfff;
}
