import type { ProblemDetail } from '../../src/problems/problem-detail';

/**
 * The most an error text of a refused request takes in task.failed, in bytes of its JSON string. An error quotes the
 * request's names (an unknown field's pointer): a name of half a megabyte would make the event larger than Kafka
 * takes, and the failure that replaced it would no longer say what was wrong with the request. Counted as written
 * (a control character is six bytes as `\u0001`, a CJK one three), so 100 errors never come near the limit.
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

/** A refused request's error as task.failed lists it: its detail and instance cut (a cut instance is no pointer). */
export function refusalError(error: ProblemDetail): ProblemDetail {
  const { detail, instance } = error;
  return { ...error, detail: cutText(detail), ...(instance === undefined ? {} : { instance: cutText(instance) }) };
}
