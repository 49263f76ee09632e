// Errors as a person reads them. The server answers OpenAI error objects
// ({"error": {"message", "type", "param", "code"}}); the page shows their message as one
// line, never the raw JSON, and says what to do where it can (401: enter the API key).

const MAX_CHARS = 400; // a longer message is cut: the chat box is not a log viewer

/** An HTTP error answer: its status, the error object's message and code. */
export class ApiError extends Error {
  constructor(status, message, code = null) {
    super(message);
    this.name = "ApiError";
    this.status = status;
    this.code = code;
  }
}

/** Collapses whitespace and control characters to one line and cuts it to `max` characters. */
export function oneLine(text, max = MAX_CHARS) {
  // control characters count as spaces: a terminal's escapes have no place in the page
  const line = String(text)
    .replace(/[\s\x00-\x1f\x7f-\x9f]+/g, " ")
    .trim();
  return line.length > max ? `${line.slice(0, max - 1)}…` : line;
}

/** The message inside a body that may be an OpenAI error object, FastAPI's {"detail"}, or
 * not JSON at all (a proxy's HTML page): whatever a person can read, never the braces. */
export function messageOf(body) {
  let obj;
  try {
    obj = JSON.parse(body);
  } catch {
    return body.replace(/<[^>]*>/g, " "); // plain text or HTML: keep only the words
  }
  const err = obj?.error ?? obj;
  if (typeof err === "string") return err;
  if (typeof err?.message === "string") return err.message;
  if (typeof obj?.detail === "string") return obj.detail;
  if (Array.isArray(obj?.detail)) return obj.detail.map((d) => d?.msg ?? "").join("; ");
  return "the server gave no reason";
}

/** Reads a failed fetch() response into an ApiError. */
export async function responseError(resp) {
  let body = "";
  try {
    body = await resp.text();
  } catch {
    // the body broke off; the status still says what happened
  }
  let code = null;
  try {
    code = JSON.parse(body)?.error?.code ?? null;
  } catch {
    // not JSON: no code
  }
  const message = body.trim() ? messageOf(body) : resp.statusText || "no reason given";
  return new ApiError(resp.status, message, code);
}

/** fetch() rejects with a TypeError when no answer came at all (refused, reset, offline). */
export function isNetworkError(err) {
  return err instanceof TypeError && /fetch|network/i.test(err.message);
}

/** The one line the chat box shows for `err`. */
export function describe(err) {
  if (err instanceof ApiError) {
    const hint = err.status === 401 ? " Enter the API key in the settings above." : "";
    const reason = oneLine(err.message) || "the server gave no reason";
    return oneLine(`Error ${err.status}: ${reason}`) + hint;
  }
  if (isNetworkError(err)) return oneLine(`Server unreachable: ${err.message}`);
  return oneLine(`Error: ${err?.message ?? err}`);
}
