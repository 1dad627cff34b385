// Admission warnings on the wire, Kubernetes style (https://kubernetes.io/blog/2020/09/03/warnings/):
// one `Warning: 299 - "<text>"` header per warning (RFC 7234 §5.5) beside the body's `warnings[]`.
import type { Context } from "hono";

/** A warn-text is a quoted-string of printable ASCII: escape `"` and `\`, replace anything else with `?`. */
export function warningHeaderValue(message: string): string {
  const text = message.replace(/[^\x20-\x7e]/g, "?").replace(/["\\]/g, (ch) => `\\${ch}`);
  return `299 - "${text}"`;
}

/** Appends one Warning header per warning and answers the body with `warnings[]` when there are any. */
export function withWarnings<T extends object>(c: Context, body: T, warnings: readonly string[]): T & { warnings?: string[] } {
  for (const warning of warnings) c.header("Warning", warningHeaderValue(warning), { append: true });
  return warnings.length > 0 ? { ...body, warnings: [...warnings] } : body;
}
