// Errors as they go into logs (docs/design.md §14.3). Logs are read by more people, and kept
// longer, than the database: an error must not carry a token or a query's parameters there.
// Database drivers put both into messages — drizzle's "Failed query: <sql> params: <values>",
// PostgreSQL's `invalid input syntax for type …: "<value>"`, a `detail` quoting a key — so a
// logged error keeps its class, SQLSTATE `code`, a message with quoted values removed, its
// stack frames and its causes, and nothing else (no detail, hint, where, query or parameters).
// Entries log it under `error`, not `err`: pino's own `err` serializer would rebuild the
// message from every cause's and drop the code.

export interface LoggedError {
  type: string;
  message: string;
  code?: string;
  stack?: string;
  cause?: LoggedError;
}

const MAX_MESSAGE = 500;
const MAX_FRAMES = 12;
const MAX_CAUSES = 3;
const SQLSTATE = /^[0-9A-Z]{5}$/;
// berth's own credentials (bp_ keys, ba_ agent credentials, bj_ join tokens, bt_ local admin
// tokens, whsec_ webhook secrets), should any message ever quote one.
const TOKEN = /\b(?:bp|ba|bj|bt)_[A-Za-z0-9_-]{16,}|\bwhsec_[A-Za-z0-9+/=]{16,}/g;
const QUOTED = /"[^"]*"|'[^']*'/g;

export function errorForLog(error: unknown, depth = 0): LoggedError {
  if (!(error instanceof Error)) {
    return { type: typeof error, message: scrub(typeof error === "string" ? error : "a value that is not an Error was thrown") };
  }
  const code = (error as { code?: unknown }).code;
  const logged: LoggedError = { type: error.constructor?.name || error.name, message: messageOf(error, code) };
  if (typeof code === "string" || typeof code === "number") logged.code = String(code).slice(0, 64);
  const frames = (error.stack ?? "").split("\n").filter((line) => /^\s+at /.test(line)).slice(0, MAX_FRAMES);
  if (frames.length > 0) logged.stack = frames.map((line) => scrub(line.trim())).join("\n");
  if (error.cause !== undefined && depth < MAX_CAUSES) logged.cause = errorForLog(error.cause, depth + 1);
  return logged;
}

function messageOf(error: Error, code: unknown): string {
  const firstLine = (error.message ?? "").split("\n")[0]!;
  // A driver's message quotes the offending value (and identifiers, which are lost with it).
  if (typeof code === "string" && SQLSTATE.test(code)) return scrub(firstLine.replace(QUOTED, '"…"'));
  // drizzle's wrapper: the whole message is the query text and its parameters.
  if ("query" in error && "params" in error) return "database query failed (its text and parameters are not logged)";
  return scrub(firstLine);
}

function scrub(text: string): string {
  return text.replace(TOKEN, "[redacted]").slice(0, MAX_MESSAGE);
}
