/**
 * Every value of one header, in the order the client sent them, read from Node's raw header list; undefined when
 * the header is absent. The auth and Idempotency-Key hooks refuse a repeated header with it. Node's
 * `headersDistinct` answers the same, but builds an array for every header of the request to do so, on every request.
 */
export function headerValues(rawHeaders: readonly string[], lowerCaseName: string): string[] | undefined {
  let values: string[] | undefined;
  for (let i = 0; i < rawHeaders.length; i += 2) {
    const name = rawHeaders[i];
    if (name.length === lowerCaseName.length && name.toLowerCase() === lowerCaseName) {
      (values ??= []).push(rawHeaders[i + 1]);
    }
  }
  return values;
}
