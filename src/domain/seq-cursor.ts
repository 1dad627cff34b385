// Opaque cursors over the event log's sequence, for newest-first histories: base64url of
// the last seq seen. Opaque, like the (createdAt, id) cursors of other lists. Other
// newest-first histories keyed by one increasing number (revisions, by generation) pass
// their own tag, so a cursor from one list is refused by another.
import { InvalidRequest } from "./errors.ts";

export function encodeSeqCursor(seq: number, tag = "seq"): string {
  return btoa(JSON.stringify([tag, seq])).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
}

export function decodeSeqCursor(value: string | undefined, tag = "seq"): number | undefined {
  if (value === undefined) return undefined;
  try {
    const parsed: unknown = JSON.parse(atob(value.replace(/-/g, "+").replace(/_/g, "/")));
    if (Array.isArray(parsed) && parsed.length === 2 && parsed[0] === tag && Number.isSafeInteger(parsed[1]) && parsed[1] > 0) {
      return parsed[1] as number;
    }
  } catch {
    // fall through
  }
  throw new InvalidRequest("The cursor is not one this API issued.", [
    { parameter: "cursor", message: "not a valid cursor; pass the nextCursor of a previous page, or omit it to start over" },
  ]);
}
