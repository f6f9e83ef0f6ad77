/**
 * JSON numbers this service would hold other than as sent. JavaScript reads every JSON number as a 64-bit float: at
 * 2^53 and beyond it holds no fraction and not every integer (9007199254740993 is read as ...992), a literal too
 * large becomes Infinity and one too small 0. A write would be acknowledged with a value the client never sent, so
 * such a body is refused instead (RFC 8259 §6 leaves the range to the implementation and warns of exactly this).
 * Below 2^53 a fraction that a float only approximates (0.1, or pi to 20 places) is read as every JSON reader reads
 * it: that is a float's precision, not a number changed.
 */

/** What a body must hold before it is scanned: a run of 16 digits (with points), or a 2-digit exponent. */
const MAY_BE_INEXACT = /\d[\d.]{15}|[eE][+-]?\d{2}/;
const NUMBER = /-?(\d+)(?:\.(\d+))?(?:[eE][+-]?\d+)?/y;
const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const MINUS = 0x2d;
const TWO_TO_53 = 2 ** 53;

/** A decimal's significant digits, without leading or trailing zeros: "0012.3400e5" and "1234e6" are both "1234". */
function significant(digits: string): string {
  return digits.replace(/^0+/, '').replace(/0+$/, '');
}

/** Whether the float read from this literal is not the number it writes. */
function inexact(literal: string, whole: string, fraction: string): boolean {
  const n = Number(literal);
  if (!Number.isFinite(n)) return true;
  const digits = significant(whole + fraction);
  if (n === 0) return digits !== '';
  if (Math.abs(n) < TWO_TO_53) return false;
  // The float's shortest decimal (what it reads back as) has every digit the literal has, or it lost some.
  const [mantissa] = Math.abs(n).toExponential().split('e');
  return significant(mantissa.replace('.', '')) !== digits;
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
    const [literal, whole, fraction = ''] = m;
    if (inexact(literal, whole, fraction)) return literal;
    i += literal.length - 1;
  }
  return undefined;
}
