// Opaque list cursors: base64url of the last row's (createdAt, id). Opaque so clients
// cannot build them, and so the encoding can change without breaking anyone.
import { InvalidRequest } from "./errors.ts";

export interface Cursor {
  createdAt: Date;
  id: string;
}

export function encodeCursor(cursor: Cursor): string {
  const json = JSON.stringify([cursor.createdAt.toISOString(), cursor.id]);
  return btoa(json).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
}

export function decodeCursor(value: string | undefined): Cursor | undefined {
  if (value === undefined) return undefined;
  const invalid = new InvalidRequest("The cursor is not one this API issued.", [
    { parameter: "cursor", message: "not a valid cursor; pass the nextCursor of a previous page, or omit it to start over" },
  ]);
  try {
    const json = atob(value.replace(/-/g, "+").replace(/_/g, "/"));
    const parsed: unknown = JSON.parse(json);
    if (!Array.isArray(parsed) || parsed.length !== 2) throw invalid;
    const [createdAt, id] = parsed;
    const date = new Date(String(createdAt));
    if (typeof createdAt !== "string" || typeof id !== "string" || Number.isNaN(date.getTime()) || id.length > 64) {
      throw invalid;
    }
    return { createdAt: date, id };
  } catch {
    throw invalid;
  }
}

/** Pages are fetched with one extra row: its presence is what says another page exists. */
export function pageOf<T extends { createdAt: Date; id: string }, R>(
  rows: T[],
  limit: number,
  map: (row: T) => R,
): { items: R[]; nextCursor: string | null } {
  const page = rows.slice(0, limit);
  const last = page[page.length - 1];
  return {
    items: page.map(map),
    nextCursor: rows.length > limit && last ? encodeCursor({ createdAt: last.createdAt, id: last.id }) : null,
  };
}
