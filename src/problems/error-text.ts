import type { ProblemDetail } from './problem-detail';

/**
 * The most an `errors[]` entry's detail or instance takes, in bytes of its JSON string. An error quotes the request's
 * names (an unknown field's pointer): a name of half a megabyte made a 400 of twice that (the name in both, `~` as
 * `~0`), and in a refused task request's task.failed, an event larger than Kafka takes, whose replacement no longer
 * said what was wrong. Counted as written (a control character is six bytes as `\u0001`, a CJK one three), so 100
 * errors never come near a record's limit.
 */
export const MAX_ERROR_TEXT_BYTES = 1000;

const encodedBytes = (text: string) => Buffer.byteLength(JSON.stringify(text)) - 2;

/** Never ends in half a surrogate pair: the service refuses such text in requests and must not write it itself. */
function withoutHalfPair(text: string): string {
  const last = text.charCodeAt(text.length - 1);
  return last >= 0xd800 && last <= 0xdbff ? text.slice(0, -1) : text;
}

/** The text, or its start followed by `…` within MAX_ERROR_TEXT_BYTES. */
export function cutText(text: string): string {
  if (encodedBytes(text) <= MAX_ERROR_TEXT_BYTES) return text;
  const room = MAX_ERROR_TEXT_BYTES - encodedBytes('…');
  let kept = withoutHalfPair(text.slice(0, room));
  while (encodedBytes(kept) > room) kept = withoutHalfPair(kept.slice(0, Math.floor(kept.length * 0.9)));
  return `${kept}…`;
}

/**
 * An error as an answer or task.failed lists it: its detail and instance cut (a cut instance is no pointer), and so
 * are those of the errors it lists (a bulk failure's element).
 */
export function cutError(error: ProblemDetail): ProblemDetail {
  const { detail, instance, errors } = error;
  return {
    ...error,
    detail: cutText(detail),
    ...(instance === undefined ? {} : { instance: cutText(instance) }),
    ...(errors === undefined ? {} : { errors: errors.map(cutError) }),
  };
}
