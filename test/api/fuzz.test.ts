// Property-based fuzzing of the deployment write routes on PGlite: random JSON values,
// mutations of a valid create body and of a merge patch (fields dropped, altered or
// added at random paths; wrong types, huge and negative numbers, NaN-like strings,
// deep nesting) and byte-level mutations of the JSON text. Whatever is sent, the answer
// is never a 5xx; a 4xx is problem+json with `errors` or `detail`; a 2xx body is what a
// later GET returns.
//
// The seed is random per run and printed on failure; rerun one with FUZZ_SEED=<seed>.
import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createTestApi, deploymentBody, silentLogger, type TestApi } from "../support/api-harness.ts";

const SEED = process.env.FUZZ_SEED ? Number(process.env.FUZZ_SEED) : Math.floor(Math.random() * 2 ** 31);

type Json = null | boolean | number | string | Json[] | { [key: string]: Json };
type Path = Array<string | number>;
type Answer = Awaited<ReturnType<TestApi["call"]>>;

// ---------------------------------------------------------------------------------------------
// Values and mutations

const NASTY_CONSTANTS: Json[] = [
  null,
  true,
  false,
  0,
  -0,
  -1,
  -1024,
  1.5,
  0.1,
  1e308,
  -1e308,
  5e-324,
  Number.MAX_SAFE_INTEGER + 2,
  2 ** 31,
  -(2 ** 31),
  2 ** 63,
  "",
  " ",
  "NaN",
  "Infinity",
  "-Infinity",
  "1e999",
  "0x10",
  " 1",
  "1",
  "null",
  "true",
  "[]",
  "{}",
  "\u0000",
  "a\u0000b",
  "😀",
  "\uD800",
  "\u202Eevil",
  "'; drop table deployments;--",
  "a".repeat(5000),
  [],
  {},
  [[[]]],
  [null],
  { "": null },
];

/** Values a field might plausibly take, so that some mutations are admitted. */
const PLAUSIBLE: Json[] = [0, 1, 2, 3, 4, 8, 16, "main", "server", "prefill", "decode", "vllm", "sglang", "org/model", "nvidia-h100-80gb", "8Gi", "500m", "x"];

/**
 * A deeply nested value, built only when a mutation uses it (fast-check prints it short).
 * At most 500 deep, so that four of them stacked stay within what the client's own
 * JSON.stringify can serialize; far deeper bodies are sent as text in bad-input.test.ts.
 */
class Nested {
  constructor(readonly depth: number, readonly asArray: boolean) {}
  build(): Json {
    let value: Json = 1;
    for (let i = 0; i < this.depth; i++) value = this.asArray ? [value] : { a: value };
    return value;
  }
  [fc.toStringMethod]() {
    return `<${this.asArray ? "array" : "object"} nested ${this.depth} deep>`;
  }
}
type Value = Json | Nested;

/** A copy of a generated value, deep nesting built out. */
function materialize(value: Value): Json {
  return value instanceof Nested ? value.build() : structuredClone(value);
}

const nastyValue: fc.Arbitrary<Value> = fc.oneof(
  { arbitrary: fc.constantFrom(...NASTY_CONSTANTS), weight: 4 },
  { arbitrary: fc.constantFrom(...PLAUSIBLE), weight: 4 },
  { arbitrary: fc.integer(), weight: 1 },
  { arbitrary: fc.double({ noNaN: true, noDefaultInfinity: true }), weight: 1 },
  { arbitrary: fc.string({ unit: "binary", maxLength: 40 }), weight: 2 },
  { arbitrary: fc.jsonValue({ maxDepth: 3 }) as fc.Arbitrary<Json>, weight: 2 },
  { arbitrary: fc.tuple(fc.integer({ min: 1, max: 500 }), fc.boolean()).map(([d, a]) => new Nested(d, a)), weight: 1 },
);

const KEYS = ["colour", "__proto__", "constructor", "prototype", "", "a/b", "~0", "name", "replicas", "spec", "roles", "labels", "model", "kind", "\u0000", "😀"];
const key = fc.oneof(fc.constantFrom(...KEYS), fc.string({ unit: "binary", maxLength: 12 }));

type Mutation =
  | { op: "delete"; at: number }
  | { op: "replace"; at: number; value: Value }
  | { op: "insert"; at: number; key: string; value: Value }
  | { op: "wrap"; at: number; asArray: boolean }
  | { op: "duplicate"; at: number; times: number };

const mutation: fc.Arbitrary<Mutation> = fc.oneof(
  fc.record({ op: fc.constant("delete" as const), at: fc.nat() }),
  fc.record({ op: fc.constant("replace" as const), at: fc.nat(), value: nastyValue }),
  fc.record({ op: fc.constant("insert" as const), at: fc.nat(), key, value: nastyValue }),
  fc.record({ op: fc.constant("wrap" as const), at: fc.nat(), asArray: fc.boolean() }),
  fc.record({ op: fc.constant("duplicate" as const), at: fc.nat(), times: fc.integer({ min: 1, max: 40 }) }),
);
const mutations = fc.array(mutation, { minLength: 1, maxLength: 4 });

function isObject(value: unknown): value is { [key: string]: Json } {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/** Every path in a value, the root first; without recursion, since values may nest thousands deep. */
function pathsOf(root: Json): Path[] {
  const out: Path[] = [];
  const queue: Array<[Json, Path]> = [[root, []]];
  for (let i = 0; i < queue.length; i++) {
    const [value, path] = queue[i]!;
    out.push(path);
    if (Array.isArray(value)) value.forEach((item, index) => queue.push([item, [...path, index]]));
    else if (isObject(value)) for (const [k, item] of Object.entries(value)) queue.push([item, [...path, k]]);
  }
  return out;
}

function getAt(root: Json, path: Path): Json {
  let current: Json = root;
  for (const segment of path) current = (current as Record<string | number, Json>)[segment]!;
  return current;
}

/** Sets an own property (so `__proto__` becomes a real field that JSON.stringify sends). */
function setOwn(target: Json, segment: string | number, value: Json) {
  if (Array.isArray(target) && typeof segment === "number") target[segment] = value;
  else Object.defineProperty(target, segment, { value, enumerable: true, writable: true, configurable: true });
}

/** Applies one mutation to a copy of `root` and returns it. */
function mutate(root: Json, m: Mutation): Json {
  const paths = pathsOf(root);
  const path = paths[m.at % paths.length]!;
  const replaceAt = (value: Json): Json => {
    if (path.length === 0) return value;
    setOwn(getAt(root, path.slice(0, -1)), path[path.length - 1]!, value);
    return root;
  };
  switch (m.op) {
    case "delete": {
      if (path.length === 0) return root;
      const parent = getAt(root, path.slice(0, -1));
      const last = path[path.length - 1]!;
      if (Array.isArray(parent)) parent.splice(last as number, 1);
      else delete (parent as Record<string, Json>)[last];
      return root;
    }
    case "replace":
      return replaceAt(materialize(m.value));
    case "insert": {
      const target = getAt(root, path);
      if (isObject(target)) setOwn(target, m.key, materialize(m.value));
      else if (Array.isArray(target)) target.push(materialize(m.value));
      else return replaceAt({ [m.key]: materialize(m.value) });
      return root;
    }
    case "wrap": {
      const target = getAt(root, path);
      return replaceAt(m.asArray ? [target] : { value: target });
    }
    case "duplicate": {
      const target = getAt(root, path);
      if (Array.isArray(target) && target.length > 0) {
        for (let i = 0; i < m.times; i++) target.push(structuredClone(target[i % target.length]!));
      }
      return root;
    }
  }
}

function applyAll(base: Json, list: Mutation[]): Json {
  let value: Json = structuredClone(base);
  for (const m of list) value = mutate(value, m);
  return value;
}

/** Byte-level damage to JSON text: cut it, drop or insert characters. */
const textDamage: fc.Arbitrary<Damage[]> = fc.array(
  fc.oneof(
    fc.record({ op: fc.constant("cut" as const), at: fc.nat() }),
    fc.record({ op: fc.constant("drop" as const), at: fc.nat() }),
    fc.record({
      op: fc.constant("insert" as const),
      at: fc.nat(),
      text: fc.oneof(fc.constantFrom("{", "}", "[", "]", ",", ":", '"', "\\", "\u0000", "\\u0000", "\\ud800", "1e999", "NaN", "/*", "\n"), fc.string({ maxLength: 4 })),
    }),
  ),
  { minLength: 1, maxLength: 3 },
);

type Damage = { op: "cut"; at: number } | { op: "drop"; at: number } | { op: "insert"; at: number; text: string };

function damage(text: string, ops: Damage[]): string {
  for (const o of ops) {
    const at = text.length === 0 ? 0 : o.at % text.length;
    if (o.op === "cut") text = text.slice(0, at);
    else if (o.op === "drop") text = text.slice(0, at) + text.slice(at + 1);
    else text = text.slice(0, at) + o.text + text.slice(at);
  }
  return text;
}

// ---------------------------------------------------------------------------------------------

describe("fuzzing the deployment writes on pglite", () => {
  let api: TestApi;
  let target: string;
  let serial = 0;
  const tally: Record<string, number> = {};

  beforeAll(async () => {
    api = await createTestApi("pglite");
    const created = await api.call("POST", "/v1/deployments", {
      body: deploymentBody("fuzz-target", { projectId: api.defaultProjectId, labels: { team: "fuzz" } }),
    });
    expect(created.status).toBe(201);
    target = created.body.id;
  });
  afterAll(async () => {
    console.log(`fuzz seed ${SEED}; answers by route and status: ${JSON.stringify(tally)}`);
    await api?.close();
  });

  /** The property every answer must have; a 2xx is read back and compared. */
  async function checkAnswer(kind: string, res: Answer): Promise<void> {
    tally[`${kind} ${res.status}`] = (tally[`${kind} ${res.status}`] ?? 0) + 1;
    expect(res.status, `${kind}: ${JSON.stringify(res.body).slice(0, 500)}`).toBeLessThan(500);
    if (res.status >= 400) {
      expect(res.headers.get("content-type")).toContain("application/problem+json");
      expect(res.body.status).toBe(res.status);
      expect(res.body.instance).toBe(res.headers.get("x-request-id"));
      expect(typeof res.body.type).toBe("string");
      expect(typeof res.body.title).toBe("string");
      const errors: unknown = res.body.errors;
      const hasErrors = Array.isArray(errors) && errors.length > 0;
      expect(hasErrors || (typeof res.body.detail === "string" && res.body.detail.length > 0)).toBe(true);
      if (Array.isArray(errors)) {
        for (const error of errors as Array<Record<string, unknown>>) {
          expect(typeof error.message).toBe("string");
          if ("pointer" in error) expect(error.pointer).toMatch(/^(\/.*)?$/s);
          else expect(typeof (error.parameter ?? error.header)).toBe("string");
        }
      }
      return;
    }
    expect([200, 201]).toContain(res.status);
    expect(res.headers.get("etag")).toBe(`"${res.body.resourceVersion}"`);
    const read = await api.call("GET", `/v1/deployments/${res.body.id}`);
    expect(read.status).toBe(200);
    // A write may carry admission warnings (an image naming no release); the stored deployment does not.
    const { warnings, ...written } = res.body;
    if (warnings !== undefined) expect(warnings).toEqual(expect.arrayContaining([expect.any(String)]));
    expect(read.body).toEqual(written);
  }

  async function run(property: fc.IAsyncProperty<any>, numRuns: number) {
    const errorsBefore = silentLogger.errors.length;
    try {
      await fc.assert(property, { numRuns, seed: SEED });
    } catch (error) {
      (error as Error).message = `FUZZ_SEED=${SEED}\n${(error as Error).message}`;
      throw error;
    }
    expect(silentLogger.errors.slice(errorsBefore)).toEqual([]);
  }

  const validCreate = (): Json => deploymentBody(`fz-${++serial}`, { projectId: api.defaultProjectId }) as unknown as Json;

  it("random JSON values as a whole body, as the spec and as a patch never give a 5xx", async () => {
    await run(
      fc.asyncProperty(fc.jsonValue({ maxDepth: 4 }) as fc.Arbitrary<Json>, async (value) => {
        await checkAnswer("POST body", await api.call("POST", "/v1/deployments", { body: value }));
        const asSpec = { ...(validCreate() as object), spec: value };
        await checkAnswer("POST spec", await api.call("POST", "/v1/deployments", { body: asSpec }));
        await checkAnswer("PATCH body", await api.call("PATCH", `/v1/deployments/${target}`, { body: value }));
        await checkAnswer("PATCH spec", await api.call("PATCH", `/v1/deployments/${target}`, { body: { spec: value } }));
      }),
      100,
    );
  }, 60_000);

  it("mutations of a valid create body never give a 5xx", async () => {
    await run(
      fc.asyncProperty(mutations, async (list) => {
        const body = applyAll(validCreate(), list);
        await checkAnswer("POST mutated", await api.call("POST", "/v1/deployments", { body }));
      }),
      300,
    );
  }, 60_000);

  it("mutations of a merge patch (from the stored deployment) never give a 5xx", async () => {
    await run(
      fc.asyncProperty(mutations, fc.boolean(), async (list, merge) => {
        const current = await api.call("GET", `/v1/deployments/${target}`);
        const base: Json = { spec: current.body.spec, labels: { ...current.body.labels, fuzzed: "yes" } };
        const body = applyAll(base, list);
        const headers: Record<string, string> = { "Content-Type": merge ? "application/merge-patch+json" : "application/json" };
        await checkAnswer("PATCH mutated", await api.call("PATCH", `/v1/deployments/${target}`, { body, headers }));
      }),
      300,
    );
  }, 60_000);

  it("mutations of a replacement (PUT) never give a 5xx", async () => {
    await run(
      fc.asyncProperty(mutations, async (list) => {
        const current = await api.call("GET", `/v1/deployments/${target}`);
        const body = applyAll({ spec: current.body.spec, labels: current.body.labels }, list);
        await checkAnswer("PUT mutated", await api.call("PUT", `/v1/deployments/${target}`, { body }));
      }),
      100,
    );
  }, 60_000);

  it("damaged JSON text never gives a 5xx", async () => {
    await run(
      fc.asyncProperty(textDamage, fc.boolean(), async (ops, asPatch) => {
        const text = damage(JSON.stringify(asPatch ? { spec: { roles: [{ name: "main", replicas: 2 }] } } : validCreate()), ops);
        const res = asPatch
          ? await api.call("PATCH", `/v1/deployments/${target}`, { rawBody: text, headers: { "Content-Type": "application/json" } })
          : await api.call("POST", "/v1/deployments", { rawBody: text, headers: { "Content-Type": "application/json" } });
        await checkAnswer(asPatch ? "PATCH text" : "POST text", res);
      }),
      150,
    );
  }, 60_000);
});
