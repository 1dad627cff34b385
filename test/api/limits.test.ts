// The limits the OpenAPI document declares are the ones the API enforces: a body or query
// one past a declared bound is a 400 problem whose errors[] names the field and the limit,
// and nothing is written. The bounds are read from the committed document, so a limit that
// drifts between the schema and the document fails here.
import { readFileSync } from "node:fs";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { EngineCompatibility } from "../../src/domain/engine-compatibility.ts";
import { GpuCatalogEntry } from "../../src/domain/gpu-profiles.ts";
import { ModelArchitecture } from "../../src/domain/model-catalog.ts";
import { createTestApi, deploymentBody, type TestApi } from "../support/api-harness.ts";

const doc = JSON.parse(readFileSync(new URL("../../openapi/openapi.json", import.meta.url), "utf8"));
const schemas = doc.components.schemas;
/** A declared bound, read from the document: `schema` names a component, `path` walks its properties. */
function bound(schema: string, path: string[], keyword: string): number {
  let node = schemas[schema];
  for (const key of path) {
    node = key === "[]" ? node.items : node.properties[key];
    if (node.$ref) node = schemas[node.$ref.split("/").pop()];
  }
  const value = node[keyword];
  expect(typeof value, `${schema}.${path.join(".")} declares ${keyword}`).toBe("number");
  return value;
}

const labelsMax = () => bound("DeploymentLabels", [], "maxProperties");

interface Case {
  what: string;
  /** The deployment body's overrides or the request to send. */
  request: () => { method: string; path: string; body?: unknown };
  /** The errors[] entry expected: its pointer (or parameter) and the limit its message names. */
  field: { pointer?: string; parameter?: string };
  limit: () => number;
}

const CASES: Case[] = [
  {
    what: "a deployment name one past its maxLength",
    request: () => ({ method: "POST", path: "/v1/deployments", body: deploymentBody("a".repeat(bound("DeploymentName", [], "maxLength") + 1)) }),
    field: { pointer: "/name" },
    limit: () => bound("DeploymentName", [], "maxLength"),
  },
  {
    what: "a label value one past its maxLength",
    request: () => ({ method: "POST", path: "/v1/deployments", body: deploymentBody("label-value", { labels: { team: "a".repeat(64) } }) }),
    field: { pointer: "/labels/team" },
    limit: () => 63,
  },
  {
    what: "one label more than maxProperties",
    request: () => ({
      method: "POST",
      path: "/v1/deployments",
      body: deploymentBody("many-labels", { labels: Object.fromEntries(Array.from({ length: labelsMax() + 1 }, (_, i) => [`k${i}`, "v"])) }),
    }),
    field: { pointer: "/labels" },
    limit: labelsMax,
  },
  {
    what: "env one entry past maxItems",
    request: () => {
      const max = bound("RoleInput", ["env"], "maxItems");
      const env = Array.from({ length: max + 1 }, (_, i) => ({ name: `V${i}`, value: "x" }));
      const body = deploymentBody("many-env");
      body.spec.roles = [{ name: "main", resources: { gpus: 1 }, env } as (typeof body.spec.roles)[number]];
      return { method: "POST", path: "/v1/deployments", body };
    },
    field: { pointer: "/spec/roles/0/env" },
    limit: () => bound("RoleInput", ["env"], "maxItems"),
  },
  {
    what: "replicas one past its maximum",
    request: () => {
      const body = deploymentBody("many-replicas");
      body.spec.roles = [{ name: "main", resources: { gpus: 1 }, replicas: bound("RoleInput", ["replicas"], "maximum") + 1 } as (typeof body.spec.roles)[number]];
      return { method: "POST", path: "/v1/deployments", body };
    },
    field: { pointer: "/spec/roles/0/replicas" },
    limit: () => bound("RoleInput", ["replicas"], "maximum"),
  },
  {
    what: "a project's maxGpus one past its maximum",
    request: () => ({ method: "POST", path: "/v1/projects", body: { name: "gpus", maxGpus: bound("ProjectCreate", ["maxGpus"], "maximum") + 1 } }),
    field: { pointer: "/maxGpus" },
    limit: () => bound("ProjectCreate", ["maxGpus"], "maximum"),
  },
  {
    what: "an API key name one past its maxLength",
    request: () => ({ method: "POST", path: "/v1/api-keys", body: { name: "k".repeat(bound("ApiKeyCreate", ["name"], "maxLength") + 1), role: "viewer" } }),
    field: { pointer: "/name" },
    limit: () => bound("ApiKeyCreate", ["name"], "maxLength"),
  },
  {
    what: "a page size one past its maximum",
    request: () => ({ method: "GET", path: "/v1/events?limit=501" }),
    field: { parameter: "limit" },
    limit: () => 500,
  },
];

describe("declared limits are enforced (pglite)", () => {
  let api: TestApi;
  beforeAll(async () => {
    api = await createTestApi("pglite");
  });
  afterAll(async () => {
    await api?.close();
  });

  it.each(CASES)("$what → 400 naming the field and the limit", async ({ request, field, limit }) => {
    const { method, path, body } = request();
    const before = await api.call("GET", "/v1/deployments");
    const res = await api.call(method, path, body === undefined ? {} : { body });
    expect(res.status, JSON.stringify(res.body)).toBe(400);
    expect(res.headers.get("content-type")).toContain("application/problem+json");
    const entry = (res.body.errors as Array<{ pointer?: string; parameter?: string; message: string }>).find((error) =>
      field.pointer !== undefined ? error.pointer === field.pointer : error.parameter === field.parameter,
    );
    expect(entry, JSON.stringify(res.body.errors)).toBeDefined();
    expect(entry!.message, JSON.stringify(entry)).toContain(String(limit()));
    const after = await api.call("GET", "/v1/deployments");
    expect(after.body.items.length).toBe(before.body.items.length);
  });

  it("labels at both limits (count and value length) are accepted", async () => {
    const labels = Object.fromEntries(Array.from({ length: labelsMax() }, (_, i) => [`k${i}`, "v".repeat(63)]));
    const res = await api.call("POST", "/v1/deployments", {
      body: deploymentBody("at-the-limits", { projectId: api.defaultProjectId, labels }),
    });
    expect(res.status, JSON.stringify(res.body)).toBe(201);
  });

  // What the server answers fits the limits it declares, too.
  it.each([
    ["/v1/catalog/models", ModelArchitecture],
    ["/v1/catalog/gpus", GpuCatalogEntry],
    ["/v1/catalog/engines", EngineCompatibility],
  ] as const)("%s: every item parses with its bounded schema", async (path, schema) => {
    const res = await api.call("GET", path);
    expect(res.status).toBe(200);
    expect(res.body.items.length).toBeGreaterThan(0);
    expect(res.body.items.length).toBeLessThanOrEqual(bound(path.endsWith("models") ? "ModelCatalog" : path.endsWith("gpus") ? "GpuCatalog" : "EngineCatalog", ["items"], "maxItems"));
    for (const item of res.body.items) {
      const parsed = schema.safeParse(item);
      expect(parsed.success, JSON.stringify(parsed.error?.issues)).toBe(true);
    }
  });
});
