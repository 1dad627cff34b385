// The engine-release gate through the API: 422 at /spec/engine/image below a feature's release,
// warnings (body and `Warning: 299` headers) on create, PATCH, PUT and deployment-request apply,
// and GET /v1/catalog/engines for any key.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createTestApi, type TestApi } from "../support/api-harness.ts";

const ELASTIC_OLD = {
  model: { name: "deepseek-ai/DeepSeek-V2-Lite" },
  engine: { name: "vllm", image: "vllm/vllm-openai:v0.11.0" },
  roles: [{ name: "ep", resources: { gpus: 1 }, parallelism: { expert: true }, elastic: { width: 2, maxWidth: 4 } }],
};
const plain = (image: string) => ({ model: { name: "Qwen/Qwen3-8B" }, engine: { name: "vllm", image }, roles: [{ name: "main" }] });
const warningsOf = (headers: Headers) => (headers.get("warning") ?? "").split(/,\s*(?=299 )/).filter(Boolean);

describe("engine compatibility through the API", () => {
  let api: TestApi;
  let viewer: string;
  beforeAll(async () => {
    api = await createTestApi("pglite");
    viewer = await api.createKey("viewer", api.defaultProjectId);
  });
  afterAll(async () => {
    await api?.close();
  });

  const create = (name: string, spec: unknown) => api.call("POST", "/v1/deployments", { body: { name, projectId: api.defaultProjectId, spec } });

  it("refuses a feature below its release: 422 invalid-spec at /spec/engine/image naming feature, release, image and way out; nothing written", async () => {
    const res = await create("old-elastic", ELASTIC_OLD);
    expect(res.status).toBe(422);
    expect(res.headers.get("content-type")).toContain("application/problem+json");
    expect(res.body).toMatchObject({ type: expect.stringContaining("invalid-spec"), status: 422, detail: "The deployment spec was not admitted (1 problem)." });
    expect(res.body.errors).toEqual([
      {
        pointer: "/spec/engine/image",
        message: expect.stringMatching(
          /^image vllm\/vllm-openai:v0\.11\.0 is vLLM 0\.11\.0, but elastic-ep \(--enable-elastic-ep .*\) needs a vLLM release after 0\.16\.0 \(https:\/\/github\.com\/vllm-project\/vllm\/pull\/34861.*\); use an image of a vLLM release after 0\.16\.0, or drop the elastic-ep shape from the spec$/,
        ),
      },
    ]);
    expect((await api.call("GET", `/v1/deployments/old-elastic?projectId=${api.defaultProjectId}`)).status).toBe(404);
  });

  it("accepts a readable release with no warnings: no warnings field, no Warning header", async () => {
    const res = await create("clean", plain("vllm/vllm-openai:v0.11.0"));
    expect(res.status).toBe(201);
    expect(res.body.warnings).toBeUndefined();
    expect(res.headers.get("warning")).toBeNull();
  });

  it("create: an unreadable tag is accepted with warnings[] and one Warning: 299 header per warning", async () => {
    const res = await create("digest", plain("vllm/vllm-openai@sha256:0123abcd"));
    expect(res.status).toBe(201);
    expect(res.body.warnings).toEqual([expect.stringContaining("engine.image vllm/vllm-openai@sha256:0123abcd: it is pinned by digest only")]);
    expect(warningsOf(res.headers)).toEqual([`299 - "${res.body.warnings[0]}"`]);
    // An Idempotency-Key replay repeats body and header.
    const body = { name: "replayed", projectId: api.defaultProjectId, spec: plain("vllm/vllm-openai:nightly") };
    const first = await api.call("POST", "/v1/deployments", { body, headers: { "Idempotency-Key": "warned-create" } });
    const replay = await api.call("POST", "/v1/deployments", { body, headers: { "Idempotency-Key": "warned-create" } });
    expect(replay.headers.get("idempotent-replayed")).toBe("true");
    expect(replay.body.warnings).toEqual(first.body.warnings);
    expect(replay.headers.get("warning")).toBe(first.headers.get("warning"));
    // GET shows the stored deployment only: warnings belong to the write that was warned.
    const read = await api.call("GET", `/v1/deployments/${res.body.id}`);
    expect(read.body.warnings).toBeUndefined();
    expect(read.headers.get("warning")).toBeNull();
  });

  it("PATCH and PUT warn too, and a known failure's warning carries its source", async () => {
    const created = await create("patched", plain("vllm/vllm-openai:v0.11.0"));
    const patched = await api.call("PATCH", `/v1/deployments/${created.body.id}`, { body: { spec: { engine: { image: "vllm/vllm-openai:latest" } } } });
    expect(patched.status).toBe(200);
    expect(patched.body.warnings).toEqual([expect.stringContaining('tag "latest" does not name a release')]);
    expect(warningsOf(patched.headers)).toHaveLength(1);

    const sglang = {
      model: { name: "Qwen/Qwen3-8B" },
      engine: { name: "sglang", image: "lmsysorg/sglang:v0.5.4" },
      router: { kind: "sglang-gateway" },
      kvTransfer: { connector: "mooncake", protocol: "tcp" },
      roles: [
        { name: "prefill", kind: "prefill" },
        { name: "decode", kind: "decode" },
      ],
    };
    const pd = await create("sglang-pd", { ...sglang, kvTransfer: { connector: "nixl" } });
    expect(pd.status).toBe(201);
    expect(pd.body.warnings).toBeUndefined();
    const replaced = await api.call("PUT", `/v1/deployments/${pd.body.id}`, { body: { spec: sglang } });
    expect(replaced.status).toBe(200);
    expect(replaced.body.warnings).toEqual([expect.stringMatching(/^known SGLang failure sglang-pd-tcp-port-exhaustion: .*Source: https:\/\/docs\.gpustack\.ai\//)]);
    const [header] = warningsOf(replaced.headers);
    expect(header).toMatch(/^299 - ".*"$/);
    expect(header).not.toMatch(/[^\x20-\x7e]/); // the header carries printable ASCII only
  });

  it("deployment-request apply answers the created deployment's warnings", async () => {
    const request = await api.call("POST", "/v1/deployment-requests", {
      body: { name: "planned", projectId: api.defaultProjectId, model: { name: "Qwen/Qwen3-8B" }, workload: { concurrency: 8 }, hardware: { gpuType: "nvidia-h100-80gb" }, overrides: { image: "registry:5000/org/img:tag" } },
    });
    expect(request.status).toBe(201);
    expect(request.body.warnings).toBeUndefined(); // planning creates no deployment
    const applied = await api.call("POST", `/v1/deployment-requests/${request.body.id}/apply`, { body: {} });
    expect(applied.status).toBe(200);
    expect(applied.body.status.phase).toBe("Deployed");
    expect(applied.body.warnings).toEqual([expect.stringContaining("engine.image registry:5000/org/img:tag")]);
    expect(warningsOf(applied.headers)).toHaveLength(1);
    const again = await api.call("POST", `/v1/deployment-requests/${request.body.id}/apply`, { body: {} });
    expect(again.body.warnings).toBeUndefined(); // nothing admitted the second time
  });

  it("GET /v1/catalog/engines serves the table to any key, and 401 without one", async () => {
    const res = await api.call("GET", "/v1/catalog/engines", { token: viewer });
    expect(res.status).toBe(200);
    expect(res.body.items.map((e: { engine: string }) => e.engine)).toEqual(["vllm", "sglang"]);
    const vllm = res.body.items[0];
    expect(vllm.features.find((f: { feature: string }) => f.feature === "pd-nixl")).toMatchObject({ minimum: "0.9.0", source: expect.stringContaining("https://github.com/vllm-project/vllm/releases/tag/v0.9.0") });
    expect(vllm.features.find((f: { feature: string }) => f.feature === "elastic-ep")).toMatchObject({ minimum: "unknown", absentIn: "0.16.0" });
    expect(res.body.items[1].knownFailures.map((f: { id: string }) => f.id)).toContain("sglang-pd-tcp-port-exhaustion");
    expect((await api.call("GET", "/v1/catalog/engines", { token: null })).status).toBe(401);
  });
});
