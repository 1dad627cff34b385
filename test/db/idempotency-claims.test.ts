// Claiming an Idempotency-Key when its holder releases it between the claim's insert and its
// read (the holder's request failed, on this instance or another). A statement trigger on the
// test's own database makes that interleaving happen every time: after each insert statement it
// deletes the holder's in-flight record, as the holder's release would. The claim must then take
// the key for real (a row that a third request finds), never report it taken without a row.
import { and, eq, sql } from "drizzle-orm";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { claimIdempotencyKey } from "../../db/queries/idempotency.ts";
import { idempotencyKeys } from "../../db/schema.ts";
import { openTestDatabase, type TestDatabase } from "../support/databases.ts";

const HOLDER = "holder-fingerprint";

describe("claiming a key released mid-claim (postgres)", () => {
  let database: TestDatabase;
  beforeAll(async () => {
    database = await openTestDatabase("postgres", { poolSize: 2 });
    await database.db.execute(sql.raw(`
      create function release_holder() returns trigger language plpgsql as $$
      begin
        delete from idempotency_keys where fingerprint = '${HOLDER}';
        return null;
      end $$;
      create trigger release_holder after insert on idempotency_keys for each statement execute function release_holder();`));
  });
  afterAll(async () => {
    await database?.close();
  });

  const now = new Date();
  const claim = (key: string, fingerprint: string) =>
    claimIdempotencyKey(database.db, {
      principal: "user:k1",
      key,
      fingerprint,
      now,
      expiresAt: new Date(now.getTime() + 3_600_000),
      staleBefore: new Date(now.getTime() - 60_000),
    });

  it("takes the key with a row of its own, so a third request finds it in flight", async () => {
    const key = "released-mid-claim";
    // The holder's in-flight claim, written with the trigger off.
    await database.db.execute(sql`alter table idempotency_keys disable trigger release_holder`);
    await database.db.insert(idempotencyKeys).values({ principal: "user:k1", key, fingerprint: HOLDER, completed: false, createdAt: now, expiresAt: new Date(now.getTime() + 3_600_000) });
    await database.db.execute(sql`alter table idempotency_keys enable trigger release_holder`);

    // Its insert conflicts with the holder's row; the trigger then releases the holder; its read finds nothing.
    expect(await claim(key, "request-b")).toEqual({ outcome: "claimed" });
    const rows = await database.db.select().from(idempotencyKeys).where(and(eq(idempotencyKeys.principal, "user:k1"), eq(idempotencyKeys.key, key)));
    expect(rows.map((row) => [row.fingerprint, row.completed])).toEqual([["request-b", false]]);

    const third = await claim(key, "request-b");
    expect(third.outcome).toBe("existing");
    expect(third.outcome === "existing" && third.row.fingerprint).toBe("request-b");
  });
});
