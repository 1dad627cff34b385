// A role's env may read a value from a Secret (Kubernetes' valueFrom.secretKeyRef shape), on
// PGlite and PostgreSQL: stored and returned as written; value with valueFrom, neither, a bad
// Secret name or key → 400 naming the field, and nothing is written.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createTestApi, deploymentBody, type TestApi } from "../support/api-harness.ts";

let projectId: string;
const withEnv = (name: string, env: unknown[]) =>
  deploymentBody(name, {
    projectId,
    spec: {
      model: { name: "Qwen/Qwen3-8B" },
      engine: { name: "vllm", image: "vllm/vllm-openai:v0.11.0" },
      roles: [{ name: "main", resources: { gpus: 1 }, env }],
    },
  });

describe.each(["pglite", "postgres"] as const)("env valueFrom.secretKeyRef on %s", (driver) => {
  let api: TestApi;
  beforeAll(async () => {
    api = await createTestApi(driver);
    projectId = api.defaultProjectId;
  });
  afterAll(async () => {
    await api?.close();
  });

  it("stores a Secret reference beside literal values and returns it as written", async () => {
    const env = [
      { name: "TEAM_TOKEN", valueFrom: { secretKeyRef: { name: "team-creds", key: "token" } } },
      { name: "OPTIONAL_KEY", valueFrom: { secretKeyRef: { name: "team.creds", key: "api_key.v2", optional: true } } },
      { name: "PLAIN", value: "1" },
    ];
    const created = await api.call("POST", "/v1/deployments", { body: withEnv("env-ref", env) });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    const read = await api.call("GET", `/v1/deployments/${created.body.id}`);
    expect(read.body.spec.roles[0].env).toEqual(env);
  });

  it.each([
    ["value and valueFrom", { name: "X", value: "1", valueFrom: { secretKeyRef: { name: "s", key: "k" } } }, "/spec/roles/0/env/0/valueFrom", /mutually exclusive/],
    ["neither", { name: "X" }, "/spec/roles/0/env/0/value", /valueFrom\.secretKeyRef/],
    ["a Secret name that is not a DNS subdomain", { name: "X", valueFrom: { secretKeyRef: { name: "Team_Creds", key: "k" } } }, "/spec/roles/0/env/0/valueFrom/secretKeyRef/name", /DNS-1123 subdomain/],
    ["a key with a slash", { name: "X", valueFrom: { secretKeyRef: { name: "s", key: "a/b" } } }, "/spec/roles/0/env/0/valueFrom/secretKeyRef/key", /Secret key/],
    ["a source other than secretKeyRef", { name: "X", valueFrom: { configMapKeyRef: { name: "c", key: "k" } } }, "/spec/roles/0/env/0/valueFrom/configMapKeyRef", /unknown field "configMapKeyRef"; remove it \(allowed fields: secretKeyRef\)/],
  ])("refuses %s with 400 naming the field, writing nothing", async (_what, entry, pointer, message) => {
    const before = (await api.call("GET", "/v1/deployments?limit=200")).body.items.length;
    const res = await api.call("POST", "/v1/deployments", { body: withEnv(`env-bad-${Math.random().toString(36).slice(2, 8)}`, [entry]) });
    expect(res.status, JSON.stringify(res.body)).toBe(400);
    expect(res.headers.get("content-type")).toContain("application/problem+json");
    const error = res.body.errors.find((e: { pointer: string }) => e.pointer === pointer);
    expect(error, JSON.stringify(res.body.errors)).toBeDefined();
    expect(error.message).toMatch(message);
    expect((await api.call("GET", "/v1/deployments?limit=200")).body.items.length).toBe(before);
  });
});
