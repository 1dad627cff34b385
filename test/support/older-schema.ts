// A PGlite database at an older schema, for tests of what a migration does to rows written the
// way berth wrote them before it: `migrateBefore(tag)` applies every committed migration before
// the one tagged `tag` (from a copy of db/migrations whose journal stops there), and
// `migrateRest()` then applies the rest from the real folder, as an upgrade would.
import { cp, mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { PGlite } from "@electric-sql/pglite";
import { drizzle } from "drizzle-orm/pglite";
import { migrate } from "drizzle-orm/pglite/migrator";

const MIGRATIONS = fileURLToPath(new URL("../../db/migrations", import.meta.url));

export interface OlderSchema {
  client: PGlite;
  db: ReturnType<typeof drizzle>;
  /** Applies the migrations before the tagged one. */
  migrateBefore(): Promise<void>;
  /** Applies every committed migration not applied yet. */
  migrateRest(): Promise<void>;
  close(): Promise<void>;
}

/** A fresh in-memory PGlite that `migrateBefore` brings to the schema just before migration `tag` (e.g. "0010_secrets_at_rest"). */
export async function openBefore(tag: string): Promise<OlderSchema> {
  const dir = await mkdtemp(join(tmpdir(), "berth-migrations-"));
  await cp(MIGRATIONS, dir, { recursive: true });
  const journalPath = join(dir, "meta", "_journal.json");
  const journal = JSON.parse(await readFile(journalPath, "utf8")) as { entries: { tag: string }[] };
  const upTo = journal.entries.findIndex((entry) => entry.tag === tag);
  if (upTo <= 0) throw new Error(`no migration tagged "${tag}" after the first in db/migrations`);
  await writeFile(journalPath, JSON.stringify({ ...journal, entries: journal.entries.slice(0, upTo) }));
  const client = new PGlite();
  await client.waitReady;
  const db = drizzle(client);
  return {
    client,
    db,
    migrateBefore: () => migrate(db, { migrationsFolder: dir }),
    migrateRest: () => migrate(db, { migrationsFolder: MIGRATIONS }),
    async close() {
      await client.close();
      await rm(dir, { recursive: true, force: true });
    },
  };
}
