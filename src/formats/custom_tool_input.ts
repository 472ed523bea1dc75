/**
 * A custom tool's call (OpenAI's free-form input, chat `custom` and responses
 * `custom_tool_call`) in the internal vocabulary, whose tool arguments are JSON text: the
 * arguments of the function other formats see the tool as, `{"input": <the text>}` (the
 * mapping responses/request.ts makes of a client's custom tool, and `customInput` reads
 * back). Passed on raw, the text reached a messages client as `input_json_delta` its SDK
 * cannot parse (the stream threw) and a body with its input lost (`{}`).
 *
 * The text streams piece by piece, so the JSON does too: the opening before the first piece,
 * each piece escaped as inside a JSON string, the closing at the end.
 */

const OPEN = '{"input":"';
const CLOSE = '"}';

/** One piece of a custom call's input as JSON text; `first` opens the object. */
export function customInputPiece(text: string, first: boolean): string {
  const inside = JSON.stringify(text).slice(1, -1);
  return first ? OPEN + inside : inside;
}

/** What ends a custom call's JSON: the closing, or the whole object when no piece came. */
export function customInputEnd(anyPiece: boolean): string {
  return anyPiece ? CLOSE : OPEN + CLOSE;
}

/** A whole custom call's input as its JSON arguments. */
export function customInputJson(text: string): string {
  return JSON.stringify({ input: text });
}
