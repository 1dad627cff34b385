// Bad input through app.request(): malformed JSON, wrong content types, oversized bodies,
// unknown fields, huge arrays, invalid ids, SQL-looking and unicode strings. Every answer
// is a 4xx RFC 9457 problem (never a 5xx) whose `instance` is the X-Request-Id, and a
// refused write changes nothing. PGlite and PostgreSQL (NUL handling differs by path).
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { ADMIN_TOKEN, createTestApi, deploymentBody, silentLogger, type TestApi } from "../support/api-harness.ts";

const DRIVERS_HERE = ["pglite", "postgres"] as const;
const MiB = 1024 * 1024;

type Answer = Awaited<ReturnType<TestApi["call"]>>;

/** A problem+json answer with the given status (or any 4xx), whose instance is the request id. */
function expectProblem(res: Answer, status?: number) {
  if (status === undefined) {
    expect(res.status, JSON.stringify(res.body)).toBeGreaterThanOrEqual(400);
    expect(res.status, JSON.stringify(res.body)).toBeLessThan(500);
  } else {
    expect(res.status, JSON.stringify(res.body)).toBe(status);
  }
  expect(res.headers.get("content-type")).toContain("application/problem+json");
  const requestId = res.headers.get("x-request-id");
  expect(requestId).toBeTruthy();
  expect(res.body).toMatchObject({
    type: expect.stringMatching(/^https:\/\//),
    title: expect.any(String),
    status: res.status,
    detail: expect.any(String),
    instance: requestId,
  });
}

/** The body-problem pointers of a 400 answer. */
function pointers(res: Answer): string[] {
  expect(Array.isArray(res.body.errors), JSON.stringify(res.body)).toBe(true);
  return res.body.errors.map((e: { pointer?: string }) => e.pointer);
}

describe.each(DRIVERS_HERE)("bad input on %s", (driver) => {
  let api: TestApi;
  let existing: { id: string; resourceVersion: number; body: unknown };

  beforeAll(async () => {
    api = await createTestApi(driver);
    const created = await api.call("POST", "/v1/deployments", {
      body: deploymentBody("existing", { projectId: api.defaultProjectId, labels: { team: "a" } }),
    });
    expect(created.status).toBe(201);
    existing = { id: created.body.id, resourceVersion: created.body.resourceVersion, body: created.body };
  });
  afterAll(async () => {
    await api?.close();
  });

  let countBefore: number;
  let errorsBefore: number;
  beforeEach(async () => {
    countBefore = await count();
    errorsBefore = silentLogger.errors.length;
  });

  /** Every deployment visible to the admin token, over all pages. */
  async function count(): Promise<number> {
    let total = 0;
    let cursor: string | null = null;
    do {
      const res: Answer = await api.call("GET", `/v1/deployments?limit=200${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ""}`);
      expect(res.status).toBe(200);
      total += res.body.items.length;
      cursor = res.body.nextCursor;
    } while (cursor);
    return total;
  }

  /** Nothing was written: same number of deployments, the existing one untouched, no 5xx logged. */
  async function expectNothingWritten() {
    expect(await count()).toBe(countBefore);
    const current = await api.call("GET", `/v1/deployments/${existing.id}`);
    expect(current.status).toBe(200);
    expect(current.body).toEqual(existing.body);
    expect(silentLogger.errors.slice(errorsBefore)).toEqual([]);
  }

  const post = (body: unknown) => api.call("POST", "/v1/deployments", { body });
  const validBody = (name: string, overrides: Record<string, unknown> = {}) =>
    deploymentBody(name, { projectId: api.defaultProjectId, ...overrides });
  const specWith = (overrides: Record<string, unknown>) => ({ ...deploymentBody("x").spec, ...overrides });

  describe("malformed JSON", () => {
    const MALFORMED = ["{bad", '{"name": "x",', "{'name': 'x'}", '{"a":1,}', "NaN", "undefined", "", "\u0000", '{"name":"x"}}'];

    it.each(MALFORMED)("POST %j → 400 malformed-body", async (raw) => {
      const res = await api.call("POST", "/v1/deployments", { rawBody: raw, headers: { "Content-Type": "application/json" } });
      expectProblem(res, 400);
      expect(res.body.type).toMatch(/malformed-body$/);
      await expectNothingWritten();
    });

    it("PATCH and PUT with malformed JSON → 400, the deployment unchanged", async () => {
      for (const method of ["PATCH", "PUT"]) {
        const res = await api.call(method, `/v1/deployments/${existing.id}`, {
          rawBody: '{"labels": {"team": "b"}',
          headers: { "Content-Type": method === "PATCH" ? "application/merge-patch+json" : "application/json" },
        });
        expectProblem(res, 400);
      }
      await expectNothingWritten();
    });

    it("with a Content-Length header (as a real server sees it) it is still 400", async () => {
      const raw = '{"name": ';
      const res = await api.call("POST", "/v1/deployments", {
        rawBody: raw,
        headers: { "Content-Type": "application/json", "Content-Length": String(raw.length) },
      });
      expectProblem(res, 400);
      await expectNothingWritten();
    });
  });

  describe("content type", () => {
    const body = () => JSON.stringify(validBody("wrong-type"));

    it.each(["text/plain", "application/xml", "application/x-www-form-urlencoded", "multipart/form-data; boundary=x", "text/json"])(
      "POST with Content-Type %s → 415 (with and without Content-Length)",
      async (type) => {
        const raw = body();
        const variants: Array<Record<string, string>> = [{ "Content-Type": type, "Content-Length": String(raw.length) }, { "Content-Type": type }];
        for (const headers of variants) {
          const res = await api.call("POST", "/v1/deployments", { rawBody: raw, headers });
          expectProblem(res, 415);
          expect(res.body.type).toMatch(/unsupported-media-type$/);
        }
        await expectNothingWritten();
      },
    );

    it("a string body with no Content-Type at all → 415", async () => {
      // fetch's Request makes such a body text/plain;charset=UTF-8.
      const res = await api.app.request("/v1/deployments", {
        method: "POST",
        headers: { Authorization: `Bearer ${ADMIN_TOKEN}` },
        body: body(),
      });
      expect(res.status).toBe(415);
      expect(res.headers.get("content-type")).toContain("application/problem+json");
      await expectNothingWritten();
    });

    it("POST refuses application/merge-patch+json when the body is declared; PATCH accepts it", async () => {
      const raw = body();
      const refused = await api.call("POST", "/v1/deployments", {
        rawBody: raw,
        headers: { "Content-Type": "application/merge-patch+json", "Content-Length": String(raw.length) },
      });
      expectProblem(refused, 415);
      await expectNothingWritten();

      const patch = JSON.stringify({ labels: { patched: "yes" } });
      const accepted = await api.call("PATCH", "/v1/deployments/existing", {
        rawBody: patch,
        headers: { "Content-Type": "application/merge-patch+json; charset=utf-8", "Content-Length": String(patch.length) },
      });
      expect(accepted.status).toBe(200);
      const undone = await api.call("PATCH", "/v1/deployments/existing", { body: { labels: { patched: null } } });
      expect(undone.status).toBe(200);
      existing.body = undone.body;
    });

    it("application/json with a charset parameter is accepted", async () => {
      const raw = JSON.stringify(validBody("with-charset"));
      const res = await api.call("POST", "/v1/deployments", {
        rawBody: raw,
        headers: { "Content-Type": "application/json; charset=utf-8", "Content-Length": String(raw.length) },
      });
      expect(res.status).toBe(201);
      expect(await count()).toBe(countBefore + 1);
    });
  });

  describe("body size", () => {
    /** A valid create body padded with whitespace to exactly `bytes` bytes. */
    const padded = (name: string, bytes: number) => {
      const json = JSON.stringify(validBody(name));
      return json.slice(0, -1) + " ".repeat(bytes - json.length) + "}";
    };

    it("a body of exactly 1 MiB is read; one byte more → 413 (Content-Length declared)", async () => {
      const atLimit = padded("at-the-limit", MiB);
      expect(atLimit.length).toBe(MiB);
      const ok = await api.call("POST", "/v1/deployments", {
        rawBody: atLimit,
        headers: { "Content-Type": "application/json", "Content-Length": String(MiB) },
      });
      expect(ok.status).toBe(201);
      countBefore += 1;

      const over = padded("over-the-limit", MiB + 1);
      const res = await api.call("POST", "/v1/deployments", {
        rawBody: over,
        headers: { "Content-Type": "application/json", "Content-Length": String(MiB + 1) },
      });
      expectProblem(res, 413);
      expect(res.body.type).toMatch(/payload-too-large$/);
      await expectNothingWritten();
    });

    it("a declared Content-Length over 1 MiB → 413 before the body is read", async () => {
      const res = await api.call("POST", "/v1/deployments", {
        rawBody: "{}",
        headers: { "Content-Type": "application/json", "Content-Length": String(64 * MiB) },
      });
      expectProblem(res, 413);
      await expectNothingWritten();
    });

    it("an over-size body without Content-Length → 413 (counted while read)", async () => {
      const res = await api.call("POST", "/v1/deployments", {
        rawBody: padded("no-length", 2 * MiB),
        headers: { "Content-Type": "application/json" },
      });
      expectProblem(res, 413);
      await expectNothingWritten();
    });

    it("a streamed (chunked) body over 1 MiB → 413; a small streamed body is read", async () => {
      const stream = (text: string, chunk = 64 * 1024) => {
        const bytes = new TextEncoder().encode(text);
        let at = 0;
        return new ReadableStream<Uint8Array>({
          pull(controller) {
            if (at >= bytes.length) return controller.close();
            controller.enqueue(bytes.subarray(at, at + chunk));
            at += chunk;
          },
        });
      };
      const send = (text: string) =>
        api.app.request("/v1/deployments", {
          method: "POST",
          headers: {
            Authorization: `Bearer ${ADMIN_TOKEN}`,
            "Content-Type": "application/json",
            "Transfer-Encoding": "chunked",
          },
          body: stream(text),
          duplex: "half",
        } as RequestInit);

      const big = await send(padded("streamed-big", 3 * MiB));
      expect(big.status).toBe(413);
      expect(big.headers.get("content-type")).toContain("application/problem+json");
      const problem = await big.json();
      expect(problem.instance).toBe(big.headers.get("x-request-id"));
      await expectNothingWritten();

      const small = await send(JSON.stringify(validBody("streamed-small")));
      expect(small.status).toBe(201);
      expect(await count()).toBe(countBefore + 1);
    });
  });

  describe("unknown fields", () => {
    it("top level and nested: each pointer names the field itself", async () => {
      const res = await post({
        ...validBody("unknown-fields"),
        colour: "red",
        spec: specWith({
          colour: "blue",
          model: { name: "m", source: { huggingFace: { repository: "org/m", colour: 1 } } },
          roles: [{ name: "main", colour: 2, resources: { gpus: 1, colour: 3 } }],
        }),
      });
      expectProblem(res, 400);
      expect(pointers(res).sort()).toEqual(
        [
          "/colour",
          "/spec/colour",
          "/spec/model/source/huggingFace/colour",
          "/spec/roles/0/colour",
          "/spec/roles/0/resources/colour",
        ].sort(),
      );
      for (const error of res.body.errors) expect(error.message).toContain('"colour"');
      await expectNothingWritten();
    });

    it("a field name with / and ~ is escaped in the pointer (RFC 6901)", async () => {
      const res = await post(validBody("escaped", { spec: specWith({ "a/b~c": 1 }) }));
      expectProblem(res, 400);
      expect(pointers(res)).toEqual(["/spec/a~1b~0c"]);
      await expectNothingWritten();
    });

    it("PATCH and PUT report unknown fields at the field, and change nothing", async () => {
      const patched = await api.call("PATCH", `/v1/deployments/${existing.id}`, { body: { colour: 1, spec: { colour: 2 } } });
      expectProblem(patched, 400);
      expect(pointers(patched)).toContain("/colour");
      const patchedSpec = await api.call("PATCH", `/v1/deployments/${existing.id}`, { body: { spec: { engine: { colour: 2 } } } });
      expectProblem(patchedSpec, 400);
      expect(pointers(patchedSpec)).toEqual(["/spec/engine/colour"]);
      const put = await api.call("PUT", `/v1/deployments/${existing.id}`, { body: { spec: specWith({ colour: 3 }), colour: 4 } });
      expectProblem(put, 400);
      expect(pointers(put).sort()).toEqual(["/colour", "/spec/colour"]);
      await expectNothingWritten();
    });

    it("__proto__ as a field is refused on create, never merged into anything", async () => {
      const raw = JSON.stringify(validBody("proto")).replace("{", '{"__proto__":{"labels":{"x":"y"}},');
      const res = await api.call("POST", "/v1/deployments", { rawBody: raw, headers: { "Content-Type": "application/json" } });
      expectProblem(res, 400);
      await expectNothingWritten();
      expect(({} as Record<string, unknown>).labels).toBeUndefined();
    });
  });

  describe("huge arrays and deep nesting", () => {
    const many = <T>(n: number, item: () => T) => Array.from({ length: n }, item);

    it("100k roles → 400 at /spec/roles", async () => {
      const res = await post(validBody("many-roles", { spec: specWith({ roles: many(100_000, () => ({})) }) }));
      expectProblem(res, 400);
      expect(pointers(res)).toEqual(["/spec/roles"]);
      await expectNothingWritten();
    });

    it("100k extraArgs, env entries or commands → 400 at the array", async () => {
      for (const [field, item] of [
        ["extraArgs", () => ""],
        ["command", () => 1],
        ["env", () => ({})],
      ] as const) {
        const res = await post(validBody(`many-${field.toLowerCase()}`, { spec: specWith({ roles: [{ name: "main", [field]: many(100_000, item) }] }) }));
        expectProblem(res, 400);
        expect(pointers(res)).toEqual([`/spec/roles/0/${field}`]);
      }
      await expectNothingWritten();
    });

    it("20k labels → 400 at /labels; 100k roles in a PATCH → 400", async () => {
      const labels = Object.fromEntries(many(20_000, () => 0).map((_, i) => [`k${i}`, "v"]));
      const res = await post(validBody("many-labels", { labels }));
      expectProblem(res, 400);
      expect(pointers(res)).toEqual(["/labels"]);

      const patched = await api.call("PATCH", `/v1/deployments/${existing.id}`, { body: { spec: { roles: many(100_000, () => ({})) } } });
      expectProblem(patched, 400);
      expect(pointers(patched)).toEqual(["/spec/roles"]);
      const patchedLabels = await api.call("PATCH", `/v1/deployments/${existing.id}`, { body: { labels } });
      expectProblem(patchedLabels, 400);
      await expectNothingWritten();
    });

    it.each([100, 10_000, 150_000])("objects nested %i deep → 400, on create, PATCH and PUT", async (depth) => {
      const deep = '{"a":'.repeat(depth) + "1" + "}".repeat(depth);
      const bodies: Array<[string, string, string]> = [
        ["POST", "/v1/deployments", `{"name":"deep","projectId":"${api.defaultProjectId}","spec":${deep}}`],
        ["POST", "/v1/deployments", `{"name":"deep","labels":${deep}}`],
        ["PATCH", `/v1/deployments/${existing.id}`, `{"spec":${deep}}`],
        ["PATCH", `/v1/deployments/${existing.id}`, `{"spec":{"model":${deep}}}`],
        ["PATCH", `/v1/deployments/${existing.id}`, `{"spec":{"roles":[${deep}]}}`],
        ["PATCH", `/v1/deployments/${existing.id}`, `{"labels":${deep}}`],
        ["PUT", `/v1/deployments/${existing.id}`, `{"spec":${deep}}`],
      ];
      for (const [method, path, raw] of bodies) {
        const res = await api.call(method, path, { rawBody: raw, headers: { "Content-Type": "application/json" } });
        expectProblem(res, 400);
      }
      await expectNothingWritten();
    });

    it("arrays nested 100k deep → 400", async () => {
      const deep = "[".repeat(100_000) + "]".repeat(100_000);
      for (const [method, path, raw] of [
        ["POST", "/v1/deployments", `{"name":"deep","spec":{"roles":${deep}}}`],
        ["PATCH", `/v1/deployments/${existing.id}`, `{"spec":{"roles":${deep}}}`],
        ["PATCH", `/v1/deployments/${existing.id}`, `{"spec":{"model":${deep}}}`],
      ] as const) {
        const res = await api.call(method, path, { rawBody: raw, headers: { "Content-Type": "application/json" } });
        expectProblem(res, 400);
      }
      await expectNothingWritten();
    });
  });

  describe("invalid ids and query parameters", () => {
    const ids: Array<[string, string]> = [
      ["a well-formed id that does not exist", "dep_00000000000000000000"],
      ["a malformed dep_ id", "dep_x"],
      ["NUL", "%00"],
      ["a NUL inside an id", "dep_%00"],
      ["a 10k-character id", "a".repeat(10_000)],
      ["SQL", encodeURIComponent("'; drop table deployments;--")],
      ["SQL in a dep_ id", encodeURIComponent("dep_' OR '1'='1")],
      ["upper case", "DEP_00000000000000000000"],
      ["dots", "..%2F..%2Fprojects"],
      ["emoji", encodeURIComponent("😀")],
      ["a lone surrogate byte sequence", "%ED%A0%80"],
      ["invalid percent-encoding", "%E0%A4%A"],
    ];

    it.each(ids)("%s: GET, PATCH, PUT, DELETE → 4xx problem", async (_, id) => {
      const path = `/v1/deployments/${id}`;
      expectProblem(await api.call("GET", path));
      expectProblem(await api.call("PATCH", path, { body: { labels: { a: "b" } } }));
      expectProblem(await api.call("PUT", path, { body: { spec: deploymentBody("x").spec } }));
      expectProblem(await api.call("DELETE", path));
      await expectNothingWritten();
    });

    it("a well-formed but unknown id → 404; a malformed name → 400 with the parameter", async () => {
      expectProblem(await api.call("GET", "/v1/deployments/dep_00000000000000000000"), 404);
      const bad = await api.call("GET", `/v1/deployments/${encodeURIComponent("'; drop table deployments;--")}`);
      expectProblem(bad, 400);
      expect(bad.body.errors).toEqual([expect.objectContaining({ parameter: "idOrName" })]);
      const long = await api.call("GET", `/v1/deployments/${"a".repeat(10_000)}`);
      expectProblem(long, 400);
    });

    it.each(["/v1/projects/%00", "/v1/projects/prj_%00", "/v1/clusters/%00", "/v1/api-keys/%00"])(
      "NUL in other resources' ids (%s) → 4xx, not a database error",
      async (path) => {
        expectProblem(await api.call("GET", path));
        expectProblem(await api.call("DELETE", path));
        await expectNothingWritten();
      },
    );

    it.each([
      ["projectId NUL on the list", "/v1/deployments?projectId=%00"],
      ["projectId NUL with a name", "/v1/deployments/existing?projectId=%00"],
      ["projectId NUL with an id", `/v1/deployments/dep_00000000000000000000?projectId=%00`],
      ["label value NUL", "/v1/deployments?label=a%3D%00"],
      ["label key NUL", "/v1/deployments?label=%00%3Da"],
      ["cursor NUL", "/v1/deployments?cursor=%00"],
      ["a 10k cursor", `/v1/deployments?cursor=${"x".repeat(10_000)}`],
      ["limit 0", "/v1/deployments?limit=0"],
      ["limit huge", "/v1/deployments?limit=1e400"],
      ["limit not a number", "/v1/deployments?limit=abc"],
      ["phase unknown", "/v1/deployments?phase=Exploded"],
      ["label without =", "/v1/deployments?label=abc"],
      ["33 labels", `/v1/deployments?${Array.from({ length: 33 }, (_, i) => `label=k${i}%3Dv`).join("&")}`],
    ])("%s → 4xx problem", async (_, path) => {
      expectProblem(await api.call("GET", path));
    });

    it("NUL in a write's query parameters → 4xx and nothing written", async () => {
      expectProblem(await api.call("PATCH", "/v1/deployments/existing?projectId=%00", { body: { labels: { a: "b" } } }));
      expectProblem(await api.call("PUT", "/v1/deployments/existing?projectId=%00", { body: { spec: deploymentBody("x").spec } }));
      expectProblem(await api.call("DELETE", "/v1/deployments/existing?projectId=%00"));
      await expectNothingWritten();
    });

    it("SQL-looking query parameters match nothing and break nothing", async () => {
      for (const path of [
        `/v1/deployments?projectId=${encodeURIComponent("' OR '1'='1")}`,
        `/v1/deployments?label=${encodeURIComponent("team=a' OR '1'='1")}`,
        `/v1/deployments?label=${encodeURIComponent("team=a\"}' OR 1=1 --")}`,
      ]) {
        const res = await api.call("GET", path);
        expect(res.status).toBe(200);
        expect(res.body.items).toEqual([]);
      }
      const byLabel = await api.call("GET", "/v1/deployments?label=team%3Da");
      expect(byLabel.body.items.map((d: { id: string }) => d.id)).toEqual([existing.id]);
    });

    it("an agent writing status to a bad id → 4xx", async () => {
      const agent = await api.createAgent(`agent-${driver}`);
      // The first cluster to register takes the waiting deployment: a legitimate write.
      existing.body = (await api.call("GET", `/v1/deployments/${existing.id}`)).body;
      for (const id of ["%00", "dep_x", "dep_00000000000000000000", "a".repeat(10_000), encodeURIComponent("'; drop table deployments;--")]) {
        expectProblem(await api.call("PUT", `/v1/deployments/${id}/status`, { token: agent.token, body: { phase: "Ready" } }));
      }
      await expectNothingWritten();
    });
  });

  describe("SQL-looking and unicode strings in bodies", () => {
    const STRINGS: Array<[string, string]> = [
      ["SQL", "'; drop table deployments;--"],
      ["SQL with quotes", `x" OR "1"="1`],
      ["emoji", "😀🚀👩‍👩‍👧"],
      ["RTL", "مرحبا\u202Eevil\u202C"],
      ["NUL", "a\u0000b"],
      ["only NUL", "\u0000"],
      ["lone high surrogate", "a\uD800b"],
      ["lone low surrogate", "\uDFFFz"],
      ["BOM and zero-width", "\uFEFFa\u200Bb"],
      ["combining", "e\u0301\u0301\u0301"],
      ["control characters", "\u0001\u0007\u001b[31m\u007f"],
      ["newline and tab", "a\nb\tc\r"],
      ["backslashes", "\\u0000\\\\"],
      ["JSON in a string", '{"$ne":null}'],
    ];

    it.each(STRINGS)("%s as the deployment name → 400 at /name", async (_, value) => {
      const res = await post(validBody(value));
      expectProblem(res, 400);
      expect(pointers(res)).toEqual(["/name"]);
      await expectNothingWritten();
    });

    it.each(STRINGS)("%s in a label key or value → 400 at the label", async (_, value) => {
      const asValue = await post(validBody("labelled", { labels: { team: value } }));
      expectProblem(asValue, 400);
      expect(pointers(asValue)).toEqual(["/labels/team"]);
      const asKey = await post(validBody("labelled", { labels: { [value]: "x" } }));
      expectProblem(asKey, 400);
      const patched = await api.call("PATCH", `/v1/deployments/${existing.id}`, { body: { labels: { team: value } } });
      expectProblem(patched, 400);
      await expectNothingWritten();
    });

    it.each(STRINGS)("%s in the model name, image, args and env → 4xx, or stored and returned exactly", async (label, value) => {
      const name = `str-${STRINGS.findIndex(([l]) => l === label)}`;
      const spec = specWith({
        model: { name: value },
        roles: [{ name: "main", extraArgs: [`--x=${value}`], env: [{ name: "X", value }] }],
      });
      const res = await post(validBody(name, { spec }));
      expect(res.status, JSON.stringify(res.body)).toBeLessThan(500);
      if (res.status >= 400) {
        expectProblem(res);
        await expectNothingWritten();
        return;
      }
      expect(res.status).toBe(201);
      expect(res.body.spec.model.name).toBe(value);
      expect(res.body.spec.roles[0].extraArgs).toEqual([`--x=${value}`]);
      expect(res.body.spec.roles[0].env).toEqual([{ name: "X", value }]);
      const read = await api.call("GET", `/v1/deployments/${res.body.id}`);
      expect(read.body).toEqual(res.body);
      const listed = await api.call("GET", `/v1/deployments?limit=200`);
      expect(listed.body.items.find((d: { id: string }) => d.id === res.body.id)).toEqual(res.body);
      // The engine image may not hold spaces; anything else is kept as sent.
      const image = `vllm/vllm-openai:${value}`;
      const patched = await api.call("PATCH", `/v1/deployments/${res.body.id}`, { body: { spec: { engine: { image } } } });
      expect(patched.status, JSON.stringify(patched.body)).toBeLessThan(500);
      if (patched.status === 200) {
        expect(patched.body.spec.engine.image).toBe(image);
        expect((await api.call("GET", `/v1/deployments/${res.body.id}`)).body.spec.engine.image).toBe(image);
      } else {
        expectProblem(patched);
      }
      expect(silentLogger.errors.slice(errorsBefore)).toEqual([]);
    });

    it.each(STRINGS)("%s as the projectId of a create → 4xx, nothing written", async (_, value) => {
      const res = await post(validBody("foreign", { projectId: value }));
      expectProblem(res);
      await expectNothingWritten();
    });

    it("NUL in other resources' body strings → 4xx, not a database error", async () => {
      for (const [path, body] of [
        ["/v1/projects", { name: "p\u0000" }],
        ["/v1/api-keys", { name: "key\u0000", role: "viewer" }],
        ["/v1/api-keys", { name: "key", role: "viewer", projectId: "\u0000" }],
        ["/v1/clusters", { name: "c\u0000" }],
        ["/v1/agent/register", { joinToken: "\u0000" }],
      ] as const) {
        const res = await api.call("POST", path, { body, token: path === "/v1/agent/register" ? null : undefined });
        expectProblem(res);
      }
      expect(silentLogger.errors.slice(errorsBefore)).toEqual([]);
    });
  });

  describe("routes and authentication", () => {
    it.each([
      ["GET", "/v1/nothing-here"],
      ["GET", "/v1/deployments/existing/nothing"],
      ["DELETE", "/v1/deployments"],
      ["POST", "/v1/deployments/existing"],
      ["GET", "/nothing"],
    ])("%s %s → 404 problem", async (method, path) => {
      const res = await api.call(method, path, method === "POST" ? { body: {} } : {});
      expectProblem(res, 404);
      expect(res.body.type).toMatch(/not-found$/);
    });

    it.each([
      ["no Authorization header", {}],
      ["an unknown key", { Authorization: "Bearer bp_0000" }],
      ["another scheme", { Authorization: "Basic YWRtaW46YWRtaW4=" }],
      ["SQL as the key", { Authorization: "Bearer ' OR '1'='1" }],
      ["an empty bearer", { Authorization: "Bearer " }],
    ])("%s → 401 with WWW-Authenticate, on reads and writes", async (_, headers) => {
      for (const [method, path, body] of [
        ["GET", "/v1/deployments", undefined],
        ["POST", "/v1/deployments", validBody("unauthenticated")],
        ["PATCH", `/v1/deployments/${existing.id}`, { labels: { a: "b" } }],
      ] as const) {
        const res = await api.call(method, path, { token: null, headers, body });
        expectProblem(res, 401);
        expect(res.headers.get("www-authenticate")).toMatch(/^Bearer /);
      }
      await expectNothingWritten();
    });

    it("a caller's sane X-Request-Id is kept as the problem instance; an insane one is replaced", async () => {
      const kept = await api.call("GET", "/v1/nothing", { headers: { "X-Request-Id": "caller-id.42" } });
      expect(kept.headers.get("x-request-id")).toBe("caller-id.42");
      expect(kept.body.instance).toBe("caller-id.42");
      const replaced = await api.call("GET", "/v1/nothing", { headers: { "X-Request-Id": "x".repeat(500) } });
      expect(replaced.headers.get("x-request-id")).toMatch(/^req_/);
      expect(replaced.body.instance).toBe(replaced.headers.get("x-request-id"));
    });
  });
});
