// The 410 of a resume point older than retention keeps (docs/design.md §14.5). Readers call it
// after reading their rows: a purge deletes rows and raises the horizon in one transaction, so
// a read that missed purged rows is always followed by a horizon that says so.
import type { Db } from "../../../db/client.ts";
import { readHorizon } from "../../../db/queries/retention.ts";
import { Gone } from "../../domain/errors.ts";
import { cursorIsGone, type RetentionStream } from "../../domain/retention.ts";

/** Throws Gone when rows after `cursor` may have been purged; `wayOut` says how to start over. */
export async function assertCursorKept(
  db: Db,
  stream: RetentionStream,
  cursor: number,
  describe: (purgedThrough: number) => string,
): Promise<void> {
  const purgedThrough = await readHorizon(db, stream);
  if (cursorIsGone(cursor, purgedThrough)) throw new Gone(describe(purgedThrough), purgedThrough);
}
