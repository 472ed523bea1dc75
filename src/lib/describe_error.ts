import { z } from "zod";

/** A URL's password (`scheme://user:secret@host`) is masked wherever a URL is shown. */
export function withoutPassword(text: string): string {
  // Up to the last "@" of the line: a password may hold "/", "?", "#", "@" and even spaces
  // (the URL check and the drivers take them). Masking too much only costs a clue.
  return text.replace(/(\/\/[^:/?#@\s]*:)[^\n]*@/g, "$1***@");
}

/** One line for an error: a validation error's first issue with its path, else the message. */
export function describeError(e: unknown): string {
  if (e instanceof z.ZodError) {
    const issue = e.issues[0];
    const path = issue.path.map((p) => typeof p === "number" ? `[${p}]` : `.${String(p)}`)
      .join("").replace(/^\./, "");
    const more = e.issues.length > 1 ? ` (and ${e.issues.length - 1} more)` : "";
    return `${path ? path + ": " : ""}${issue.message}${more}`;
  }
  const err = e as { message?: unknown; cause?: unknown };
  const message = typeof err?.message === "string" && err.message ? err.message : String(e);
  const line = (message.split("\n").find((l) => l.trim()) ?? message).trim();
  // fetch says only "fetch failed"; what failed (refused, DNS, TLS) is in its cause.
  const cause = err?.cause ? describeError(err.cause) : "";
  return withoutPassword(cause && !line.includes(cause) ? `${line}: ${cause}` : line);
}
