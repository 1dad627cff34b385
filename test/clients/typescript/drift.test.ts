// The committed generated types must be exactly what openapi-typescript emits from the
// committed openapi/openapi.json (regenerate with `npm run client:generate`).
import { readFile } from "node:fs/promises";
import { describe, expect, it } from "vitest";
import { OPENAPI_DOCUMENT, SCHEMA_FILE, renderSchemaTypes } from "../../../clients/typescript/scripts/generate.ts";

describe("generated client types", () => {
  it("match what the generator emits from openapi/openapi.json", async () => {
    const committed = await readFile(SCHEMA_FILE, "utf8");
    const emitted = await renderSchemaTypes(await readFile(OPENAPI_DOCUMENT, "utf8"));
    // toBe on two long strings prints a diff; the hint says how to fix it.
    expect(committed, "clients/typescript/src/schema.ts is stale: run `npm run client:generate`").toBe(emitted);
  });

  it("keep defaulted fields optional (--default-non-nullable false)", async () => {
    const committed = await readFile(SCHEMA_FILE, "utf8");
    // limit has a default (50) in the list query; it must stay optional for callers.
    expect(committed).toMatch(/limit\?: number;/);
  });
});
