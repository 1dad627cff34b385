// The same basic database behaviour on every driver: PGlite, node-postgres and Neon
// (through the local WebSocket proxy), each against a fresh migrated database.
import { asc, eq, inArray, sql } from "drizzle-orm";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { nextResourceVersion, projects } from "../../db/schema.ts";
import { DRIVERS, openTestDatabase } from "../support/databases.ts";
import type { TestDatabase } from "../support/databases.ts";

function projectRow(id: string, name = id) {
  const now = new Date("2025-01-01T00:00:00.000Z");
  return { id, name, maxGpus: 8, resourceVersion: nextResourceVersion, createdAt: now, updatedAt: now };
}

describe.each(DRIVERS)("database on %s", (driver) => {
  let database: TestDatabase;

  beforeAll(async () => {
    database = await openTestDatabase(driver);
  });

  afterAll(async () => {
    await database?.close();
  });

  it("pings", async () => {
    await expect(database.ping()).resolves.toBeUndefined();
  });

  it("migrate is idempotent on an already migrated database", async () => {
    await database.migrate();
    await database.migrate();
    expect(await database.db.select().from(projects)).toEqual([]);
  });

  it("inserts and selects a project", async () => {
    const [inserted] = await database.db.insert(projects).values(projectRow("prj_insert", "insert-me")).returning();
    expect(inserted).toMatchObject({ id: "prj_insert", name: "insert-me", maxGpus: 8 });
    expect(typeof inserted.resourceVersion).toBe("number");
    expect(inserted.createdAt).toBeInstanceOf(Date);

    const rows = await database.db.select().from(projects).where(eq(projects.id, "prj_insert"));
    expect(rows).toEqual([inserted]);
    expect(rows[0].createdAt.toISOString()).toBe("2025-01-01T00:00:00.000Z");
  });

  it("rolls back a failed transaction completely", async () => {
    await expect(
      database.db.transaction(async (tx) => {
        await tx.insert(projects).values(projectRow("prj_rollback"));
        const inside = await tx.select().from(projects).where(eq(projects.id, "prj_rollback"));
        expect(inside).toHaveLength(1);
        throw new Error("abort on purpose");
      }),
    ).rejects.toThrow("abort on purpose");

    expect(await database.db.select().from(projects).where(eq(projects.id, "prj_rollback"))).toEqual([]);
  });

  it("hands out increasing values from resource_version_seq", async () => {
    const next = async () => {
      const result = await database.db.execute(sql`select nextval('resource_version_seq') as v`);
      const rows = (result as unknown as { rows: Array<{ v: string | number | bigint }> }).rows;
      return Number(rows[0].v);
    };
    const a = await next();
    const b = await next();
    const c = await next();
    expect(b).toBeGreaterThan(a);
    expect(c).toBeGreaterThan(b);
  });

  // PGlite is one connection: transactions serialise there, so SKIP LOCKED has nothing to
  // skip. The claim test exists only for the multi-connection drivers.
  const multiConnection = driver !== "pglite";
  if (multiConnection) it("concurrent FOR UPDATE SKIP LOCKED claims get disjoint rows", async () => {
    const ids = Array.from({ length: 10 }, (_, i) => `prj_claim_${String(i).padStart(2, "0")}`);
    await database.db.insert(projects).values(ids.map((id) => projectRow(id)));

    // A claims first and keeps its transaction open until B has claimed too, so B
    // must skip A's locked rows rather than wait for them.
    let aClaimed!: () => void;
    const aHasClaimed = new Promise<void>((resolve) => (aClaimed = resolve));
    let bClaimed!: () => void;
    const bHasClaimed = new Promise<void>((resolve) => (bClaimed = resolve));

    const claim = (onClaimed: () => void, waitFor: Promise<void> | undefined, before: Promise<void> | undefined) =>
      database.db.transaction(async (tx) => {
        await before;
        const rows = await tx
          .select({ id: projects.id })
          .from(projects)
          .where(inArray(projects.id, ids))
          .orderBy(asc(projects.id))
          .limit(6)
          .for("update", { skipLocked: true });
        onClaimed();
        await waitFor;
        return rows.map((row) => row.id);
      });

    const [a, b] = await Promise.all([claim(aClaimed, bHasClaimed, undefined), claim(bClaimed, undefined, aHasClaimed)]);

    expect(a).toEqual(ids.slice(0, 6));
    expect(b).toEqual(ids.slice(6));
    expect(a.filter((id) => b.includes(id))).toEqual([]);
  });
});
