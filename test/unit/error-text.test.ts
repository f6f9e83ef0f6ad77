import { cutError, cutText, MAX_ERROR_TEXT_BYTES } from '../../src/problems/error-text';
import { isWellFormed } from '../../src/lib/ill-formed-text';
import { problem } from '../../src/problems/problem-detail';

const bytesAsJson = (text: string) => Buffer.byteLength(JSON.stringify(text)) - 2;

test('a text within the limit is kept whole', () => {
  const text = `/input/${'a'.repeat(900)}`;
  expect(cutText(text)).toBe(text);
});

test('a longer text keeps its start and says it was cut, within the limit as written in JSON', () => {
  for (const unit of ['a', '\u0001', '界', '😀', '"']) {
    const cut = cutText(`/input/${unit.repeat(5000)}`);
    expect(cut.startsWith(`/input/${unit}`)).toBe(true);
    expect(cut.endsWith('…')).toBe(true);
    expect(bytesAsJson(cut)).toBeLessThanOrEqual(MAX_ERROR_TEXT_BYTES);
    expect(isWellFormed(cut)).toBe(true);
  }
});

test('a cut never leaves half a surrogate pair', () => {
  for (let pad = 0; pad < 4; pad += 1) {
    expect(isWellFormed(cutText(`${'a'.repeat(990 + pad)}${'😀'.repeat(100)}`))).toBe(true);
  }
});

test("an error's detail and instance are cut, the rest kept", () => {
  const name = `/input/${'\u0001'.repeat(2000)}`;
  const error = cutError(problem('invalid-field', `${name} is not a known field`, { instance: name }));
  expect(error).toMatchObject({ type: 'https://hookstream.dev/problems/invalid-field', status: 400 });
  expect(bytesAsJson(error.detail)).toBeLessThanOrEqual(MAX_ERROR_TEXT_BYTES);
  expect(bytesAsJson(error.instance as string)).toBeLessThanOrEqual(MAX_ERROR_TEXT_BYTES);
  // 100 of them, the most a refusal lists, stay far below the million bytes of one record.
  expect(Buffer.byteLength(JSON.stringify(Array(100).fill(error)))).toBeLessThan(300000);
});
