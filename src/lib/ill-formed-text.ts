/** ES2024's String.prototype.isWellFormed, which Node 20 has; the project's lib is ES2022. */
export const isWellFormed = (s: string): boolean => (s as string & { isWellFormed(): boolean }).isWellFormed();

const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/g;

/**
 * JSON pointer token of a key (RFC 6901), a lone surrogate in it written out as `\uXXXX`: the pointer goes into a
 * Problem's detail, which must not break a strict parser either.
 */
export const pointerToken = (key: string): string =>
  key
    .replace(/~/g, '~0')
    .replace(/\//g, '~1')
    .replace(LONE_SURROGATE, (c) => `\\u${c.charCodeAt(0).toString(16)}`);

/**
 * Where `value` holds a string (or key) with a lone surrogate, as a JSON pointer; undefined when it holds none.
 * Such a string is valid JSON text but no Unicode text: stored, it would make every later answer that holds it
 * unreadable to strict parsers.
 */
export function illFormedStringAt(value: unknown): string | undefined {
  const stack: { node: unknown; at: string }[] = [{ node: value, at: '' }];
  for (let next = stack.pop(); next; next = stack.pop()) {
    const { node, at } = next;
    if (typeof node === 'string') {
      if (!isWellFormed(node)) return at;
      continue;
    }
    if (typeof node !== 'object' || node === null) continue;
    for (const [key, child] of Object.entries(node)) {
      const childAt = `${at}/${pointerToken(key)}`;
      if (!Array.isArray(node) && !isWellFormed(key)) return childAt;
      stack.push({ node: child, at: childAt });
    }
  }
  return undefined;
}
