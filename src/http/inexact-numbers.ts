/**
 * JSON numbers this service would hold other than as sent. JavaScript reads every JSON number as a double, so an
 * integer beyond ±(2^53 - 1) loses digits (9007199254740993 is stored as ...992), a literal too large becomes
 * Infinity and one too small becomes 0: a write would be acknowledged with a value the client never sent. Such a
 * body is refused instead (RFC 8259 §6 leaves the range to the implementation and warns of exactly this).
 * A fraction that a double only approximates (0.1) is not refused: that is what every JSON reader does with it.
 */

/** What a body must hold before it is scanned: a run of 16 digits (15 are always exact), or a 3-digit exponent. */
const MAY_BE_INEXACT = /\d{16}|[eE][+-]?\d{3}/;
const NUMBER = /-?(\d+)(\.\d+)?([eE][+-]?\d+)?/y;
const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const MINUS = 0x2d;

/** Whether the double read from this literal is not the number it writes. */
function inexact(literal: string, integer: boolean, mantissa: string): boolean {
  const n = Number(literal);
  if (!Number.isFinite(n)) return true;
  if (integer) return !Number.isSafeInteger(n);
  return n === 0 && /[1-9]/.test(mantissa);
}

/**
 * The first number literal in `text` (JSON that parsed) that would not be held as written, or undefined. Strings
 * are skipped: their digits are text.
 */
export function inexactNumberIn(text: string): string | undefined {
  if (!MAY_BE_INEXACT.test(text)) return undefined;
  for (let i = 0; i < text.length; i += 1) {
    const c = text.charCodeAt(i);
    if (c === QUOTE) {
      for (i += 1; i < text.length && text.charCodeAt(i) !== QUOTE; i += 1)
        if (text.charCodeAt(i) === BACKSLASH) i += 1;
      continue;
    }
    if (c !== MINUS && (c < 0x30 || c > 0x39)) continue;
    NUMBER.lastIndex = i;
    const m = NUMBER.exec(text);
    if (!m) continue;
    const [literal, digits, fraction = '', exponent] = m;
    if (inexact(literal, fraction === '' && exponent === undefined, digits + fraction)) return literal;
    i += literal.length - 1;
  }
  return undefined;
}
