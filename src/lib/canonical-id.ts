const UUID_FORM = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const UPPER = /[A-F]/;

/**
 * RFC 9562 §4: a UUID is read without regard to case and written in lower case, as every id this service makes
 * is. So an id in UUID form is compared in lower case; any other id (a seeded `u-ada`) is kept as it is.
 */
export function canonicalId(id: string): string {
  return id.length === 36 && UPPER.test(id) && UUID_FORM.test(id) ? id.toLowerCase() : id;
}

/** A path (an href sent back) with each segment in UUID form in lower case. */
export function canonicalPath(path: string): string {
  return path.split('/').map(canonicalId).join('/');
}
