// Migration 0007 backfills a revision for every deployment that existed before revisions were
// recorded, so no deployment's history is empty: migrate a PGlite database to 0006, write a
// deployment the way berth did then, and apply the rest.
import { afterAll, beforeAll, expect, it } from "vitest";
import { deploymentRevisions, deployments } from "../../db/schema.ts";
import { openBefore, type OlderSchema } from "../support/older-schema.ts";

let older: OlderSchema;

beforeAll(async () => {
  older = await openBefore("0007_revisions");
});

afterAll(async () => {
  await older?.close();
});

it("gives each existing deployment its current generation as a revision by actor system", async () => {
  const { db, client } = older;
  await older.migrateBefore();
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
  await older.migrateRest();
  expect(await db.select().from(deploymentRevisions)).toEqual([
    { deploymentId: "dep_old", generation: 4, spec, actor: { kind: "system" }, rollbackOf: null, createdAt: edited },
  ]);
});
