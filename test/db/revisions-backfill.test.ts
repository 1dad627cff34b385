// Migration 0007 backfills a revision for every deployment that existed before revisions were
// recorded, so no deployment's history is empty: migrate a PGlite database to 0006, write a
// deployment the way berth did then, and apply the rest.
import { cp, mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { PGlite } from "@electric-sql/pglite";
import { drizzle } from "drizzle-orm/pglite";
import { migrate } from "drizzle-orm/pglite/migrator";
import { afterAll, beforeAll, expect, it } from "vitest";
import { deploymentRevisions, deployments } from "../../db/schema.ts";

const migrations = fileURLToPath(new URL("../../db/migrations", import.meta.url));
let dir: string;
let client: PGlite;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "berth-migrations-"));
  await cp(migrations, dir, { recursive: true });
  const journalPath = join(dir, "meta", "_journal.json");
  const journal = JSON.parse(await readFile(journalPath, "utf8")) as { entries: { tag: string }[] };
  const upTo = journal.entries.findIndex((entry) => entry.tag.startsWith("0007_"));
  expect(upTo).toBeGreaterThan(0);
  await writeFile(journalPath, JSON.stringify({ ...journal, entries: journal.entries.slice(0, upTo) }));
  client = new PGlite();
  await client.waitReady;
});

afterAll(async () => {
  await client?.close();
  if (dir) await rm(dir, { recursive: true, force: true });
});

it("gives each existing deployment its current generation as a revision by actor system", async () => {
  const db = drizzle(client);
  await migrate(db, { migrationsFolder: dir });
  const then = new Date("2026-10-01T08:00:00.000Z");
  // The projects table as of 0006 (today's schema has columns added later): plain SQL.
  await client.query(
    "insert into projects (id, name, max_gpus, resource_version, created_at, updated_at) values ($1, $2, null, nextval('resource_version_seq')::bigint, $3, $3)",
    ["prj_old", "old", then.toISOString()],
  );
  const spec = { model: { name: "Qwen/Qwen3-8B" }, engine: { name: "vllm", image: "vllm/vllm-openai:v0.11.0" }, roles: [] };
  const edited = new Date("2026-10-02T09:30:00.000Z");
  await db.insert(deployments).values({
    id: "dep_old",
    projectId: "prj_old",
    name: "old",
    labels: {},
    spec,
    status: { phase: "Pending" },
    phase: "Pending",
    clusterId: null,
    deletionRequestedAt: null,
    generation: 4,
    resourceVersion: 2,
    createdVersion: 2,
    createdAt: then,
    updatedAt: edited,
  });
  await migrate(db, { migrationsFolder: migrations });
  expect(await db.select().from(deploymentRevisions)).toEqual([
    { deploymentId: "dep_old", generation: 4, spec, actor: { kind: "system" }, rollbackOf: null, createdAt: edited },
  ]);
});
