// Errors as logs carry them: real driver errors (PGlite and PostgreSQL through drizzle) whose
// messages quote a parameter, and a driver error with detail, come out without the value.
import { sql } from "drizzle-orm";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { errorForLog } from "../../src/services/log-error.ts";
import { openTestDatabase, type TestDatabase } from "../support/databases.ts";

const TOKEN = "bp_" + "0123456789abcdef".repeat(4);

describe.each(["pglite", "postgres"] as const)("errorForLog with %s errors", (driver) => {
  let database: TestDatabase;
  beforeAll(async () => {
    database = await openTestDatabase(driver);
  });
  afterAll(async () => {
    await database?.close();
  });

  it("drops the query text and its parameters, keeps the class and SQLSTATE", async () => {
    const error = await database.db.execute(sql`select ${TOKEN}::uuid as id`).then(
      () => undefined,
      (caught: unknown) => caught,
    );
    expect(String(error)).toContain(TOKEN); // what String(error) used to log
    const logged = errorForLog(error);
    expect(JSON.stringify(logged)).not.toContain(TOKEN);
    expect(JSON.stringify(logged)).not.toContain("::uuid");
    expect(logged.message).toMatch(/not logged/);
    expect(logged.cause).toMatchObject({ code: "22P02", message: expect.stringContaining("invalid input syntax for type uuid") });
    expect(logged.stack).toMatch(/^at /);
  });
});

describe("errorForLog", () => {
  it.each([
    ["a driver detail", Object.assign(new Error('duplicate key value violates unique constraint "api_keys_pkey"'), { code: "23505", detail: `Key (token_hash)=(${TOKEN}) already exists.` }), /duplicate key value violates unique constraint "…"/],
    ["a token in a plain message", new Error(`could not use ${TOKEN} for this`), /could not use \[redacted\] for this/],
    ["a webhook secret", new Error("secret whsec_" + "A".repeat(43) + "= rejected"), /secret \[redacted\] rejected/],
    ["a second line", new Error(`first line\nparams: ${TOKEN}`), /^first line$/],
    ["a thrown string", `boom ${TOKEN}`, /^boom \[redacted\]$/],
  ])("keeps %s out", (_name, error, message) => {
    const logged = errorForLog(error);
    expect(JSON.stringify(logged)).not.toContain(TOKEN);
    expect(JSON.stringify(logged)).not.toContain("AAAAAAAAAAAAAAAA");
    expect(logged.message).toMatch(message);
  });

  it("follows causes a few levels deep", () => {
    const inner = Object.assign(new Error("connection terminated"), { code: "57P01" });
    const logged = errorForLog(new Error("outer", { cause: new Error("middle", { cause: inner }) }));
    expect(logged).toMatchObject({ type: "Error", message: "outer", cause: { message: "middle", cause: { code: "57P01" } } });
  });
});
