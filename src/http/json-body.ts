import { isAscii, isUtf8 } from 'node:buffer';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { ProblemError } from '../problems/problem-error';
import { illFormedStringAt } from '../lib/ill-formed-text';
import { inexactNumberIn } from './inexact-numbers';

/**
 * Objects and arrays nested deeper than this are refused. Code that walks a body recursively (a merge patch, a
 * schema, `JSON.stringify`) would otherwise run out of stack on a body a few thousand levels deep, a 500 for
 * what is a client's mistake; no document of this API comes anywhere near it.
 */
export const MAX_BODY_DEPTH = 100;

/**
 * Labels whose bytes for JSON are UTF-8's. US-ASCII is not among them: a body so labelled that holds more than ASCII
 * is mislabelled, and refused as any other charset's would be.
 */
const UTF8_COMPATIBLE = new Set(['utf-8', 'utf8']);
/**
 * Encodings (by the WHATWG Encoding Standard's names) in which ASCII text is not ASCII's bytes: a `{` in UTF-16 is two
 * bytes, one of them NUL. A label the standard does not know (EBCDIC's cp037, UTF-7, UTF-32) counts as one too: what
 * its bytes mean is not known here.
 */
const ASCII_INCOMPATIBLE = new Set(['utf-16le', 'utf-16be', 'replacement']);

/** Whether ASCII text labelled `charset` is ASCII's bytes. */
function asciiCompatible(charset: string): boolean {
  try {
    return !ASCII_INCOMPATIBLE.has(new TextDecoder(charset).encoding);
  } catch {
    return false;
  }
}

type Done = (err: Error | null, body?: unknown) => void;
type JsonParser = (request: FastifyRequest, body: string, done: Done) => void;
type RawJsonParser = (request: FastifyRequest, body: Buffer, done: Done) => void;

/** A `\uD800`-`\uDFFF` escape: the only way JSON text that is valid UTF-8 can hold a lone surrogate. */
const SURROGATE_ESCAPE = /\\u[dD][89a-fA-F][0-9a-fA-F]{2}/;

/** Whether `value` has objects or arrays more than `max` levels deep (the top level is level 1). */
export function nestsDeeperThan(value: unknown, max: number): boolean {
  const stack: { node: unknown; depth: number }[] = [{ node: value, depth: 1 }];
  for (let next = stack.pop(); next; next = stack.pop()) {
    const { node, depth } = next;
    if (typeof node !== 'object' || node === null) continue;
    if (depth > max) return true;
    for (const child of Array.isArray(node) ? node : Object.values(node)) {
      if (typeof child === 'object' && child !== null) stack.push({ node: child, depth: depth + 1 });
    }
  }
  return false;
}

/**
 * JSON text is UTF-8 (RFC 8259 §8.1): a body declared in another charset would be read as something else. A charset
 * named twice is refused (RFC 6838 §4.3: a parameter may occur once), whichever the two say.
 */
function declaredCharset(contentType: string | undefined): string | undefined {
  // Most bodies name no charset: no splitting on the path of every write.
  if (!contentType || !/charset/i.test(contentType)) return undefined;
  const params = contentType
    .split(';')
    .slice(1)
    .map((p) => p.trim().toLowerCase())
    .filter((p) => p.startsWith('charset='));
  if (params.length > 1) {
    throw new ProblemError('unsupported-media-type', 'The Content-Type names its charset more than once.');
  }
  return params[0]?.slice('charset='.length).replace(/^"|"$/g, '');
}

/**
 * Fastify's JSON parser (which refuses `__proto__` and `constructor.prototype` keys), plus what it leaves out:
 * an empty body is no body (a DELETE sent with a JSON Content-Type by habit), text in a charset other than UTF-8
 * is 415, and bytes that are not UTF-8, a lone surrogate escape or a body nested deeper than MAX_BODY_DEPTH are 400.
 * It reads the bytes: decoded first, bytes that are not UTF-8 would be stored as U+FFFD, garbled without a word.
 */
export function jsonBodyParser(app: FastifyInstance): RawJsonParser {
  const parse = app.getDefaultJsonParser('error', 'error') as JsonParser;
  return (request, raw, done) => {
    // Unrouted (OPTIONS of a path, answered with its Allow): the body means nothing, so it is not read as JSON.
    if (request.is404) return done(null, undefined);
    // RFC 8259 §11: the parameter has no effect on JSON, so a label is refused only where it would: ASCII reads the
    // same in every ASCII-compatible charset, but a body that declares Latin-1 and holds "é" does not, nor does one
    // declared UTF-16 (whose bytes may all be below 0x80, NULs included).
    let charset: string | undefined;
    try {
      charset = declaredCharset(request.headers['content-type']);
    } catch (err) {
      return done(err as ProblemError);
    }
    const other = charset !== undefined && !UTF8_COMPATIBLE.has(charset);
    if (charset !== undefined && other && (!asciiCompatible(charset) || !isAscii(raw))) {
      const detail = `JSON bodies are UTF-8; this one declares charset=${charset}, in which it is not ASCII text.`;
      return done(new ProblemError('unsupported-media-type', detail));
    }
    if (!isUtf8(raw)) return done(new ProblemError('malformed-body', 'The body is not valid UTF-8 (RFC 8259 §8.1).'));
    const body = raw.toString('utf8');
    if (body === '') return done(null, undefined);
    parse(request, body, (err, value) => {
      if (err) return done(refusedKey(body) ?? err);
      if (nestsDeeperThan(value, MAX_BODY_DEPTH)) {
        const detail = `The body nests objects or arrays more than ${MAX_BODY_DEPTH} levels deep.`;
        return done(new ProblemError('malformed-body', detail));
      }
      // Walked only when the text has such an escape: most bodies never pay for it.
      const illFormed = SURROGATE_ESCAPE.test(body) ? illFormedStringAt(value) : undefined;
      if (illFormed !== undefined) {
        const detail = `The string at "${illFormed}" has a lone surrogate escape (\\uD800-\\uDFFF unpaired); it is no text.`;
        return done(new ProblemError('malformed-body', detail));
      }
      const inexact = inexactNumberIn(body);
      if (inexact !== undefined) return done(new ProblemError('malformed-body', inexactDetail(inexact)));
      done(null, value);
    });
  };
}

function inexactDetail(literal: string): string {
  const shown = literal.length > 40 ? `${literal.slice(0, 37)}...` : literal;
  return (
    `The number ${shown} cannot be held as sent: a 64-bit float would change it (at 2^53 and beyond it holds no ` +
    'fraction and not every integer; far out it becomes infinite or 0). Send it as a string.'
  );
}

/**
 * Fastify's parser says "not valid JSON" also for a prototype-polluting key (it refuses `__proto__` and
 * `constructor.prototype`); JSON that parses is told apart and named. Only a refused body pays for a second parse.
 */
function refusedKey(body: string): ProblemError | undefined {
  try {
    JSON.parse(body);
  } catch {
    return undefined;
  }
  const detail = 'The body has a "__proto__" key, or a "constructor" holding "prototype", which this API refuses.';
  return new ProblemError('malformed-body', detail);
}
