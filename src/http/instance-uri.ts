/** What an RFC 3986 path may hold as it is: unreserved, sub-delims, ':', '@', '/', and '%' of an escape. */
const NOT_IN_PATH = /[^A-Za-z0-9\-._~!$&'()*+,;=:@/%]/g;

/**
 * A request path as a Problem's `instance`, which is a URI reference (RFC 9457 §3.1.5): Node hands the path on as the
 * client sent it, and a client may send `<`, `"`, a backslash or a space-free control character, which are no part of
 * a URI (and a `"` or `<` copied into a page that shows the Problem is a hazard). Those are percent-encoded; the rest,
 * escapes included, is kept as sent.
 */
export function instanceUri(path: string): string {
  return path.replace(NOT_IN_PATH, (c) => encodeURIComponent(c));
}
