// The simulated cluster's OpenAPI documents: definitions.json is what the generator makes from
// kubernetes-models today, every served kind is in its group-version document (with the
// extensions kubectl reads), the documents are valid OpenAPI, and the field checks behind
// fieldValidation find unknown fields and wrong types.
import { readFileSync } from "node:fs";
import { Validator } from "@seriousme/openapi-schema-validator";
import { describe, expect, it } from "vitest";
import { openApiDocuments, definitionOf, definitions } from "../../../k8s/sim/openapi/documents.ts";
import { fieldProblems, validateFields } from "../../../k8s/sim/openapi/field-validation.ts";
import { DEFINITIONS_PATH, renderDefinitionsFile } from "../../../k8s/sim/openapi/generate.ts";
import { groupVersion, resourceOf, RESOURCES } from "../../../k8s/sim/resources.ts";

const docPath = (r: { group: string; version: string }) => (r.group ? `apis/${r.group}/${r.version}` : `api/${r.version}`);
const v3 = (r: { group: string; version: string }) => JSON.parse(openApiDocuments().v3.get(docPath(r))!.body) as Record<string, any>;

describe("definitions.json", () => {
  it("is what `npm run sim:openapi` generates from the installed kubernetes-models", () => {
    expect(readFileSync(DEFINITIONS_PATH, "utf8")).toBe(renderDefinitionsFile());
  });
});

describe("documents", () => {
  it("the v3 index points at one document per served group-version, by hash", () => {
    const { index, v3: documents } = openApiDocuments();
    const paths = (JSON.parse(index.body) as { paths: Record<string, { serverRelativeURL: string }> }).paths;
    expect(Object.keys(paths).sort()).toEqual([...new Set(RESOURCES.map(docPath))].sort());
    for (const [key, { serverRelativeURL }] of Object.entries(paths)) expect(serverRelativeURL).toBe(`/openapi/v3/${key}?hash=${documents.get(key)!.hash}`);
  });

  it.each(RESOURCES.map((r) => [`${groupVersion(r)} ${r.kind}`, r] as const))("%s: schema tagged with its GVK and a PATCH taking fieldValidation", (_name, r) => {
    const doc = v3(r);
    const gvk = { group: r.group, version: r.version, kind: r.kind };
    expect(doc.components.schemas[definitionOf(r)]["x-kubernetes-group-version-kind"]).toEqual([gvk]);
    const patches = Object.values(doc.paths as Record<string, any>)
      .map((item) => item.patch)
      .filter((op) => op && JSON.stringify(op["x-kubernetes-group-version-kind"]) === JSON.stringify(gvk));
    expect(patches).toHaveLength(1);
    expect(patches[0].parameters.map((p: { name: string }) => p.name)).toEqual(expect.arrayContaining(["fieldValidation", "fieldManager", "force"]));
    // Not offered, so kubectl apply uses its built-in patch metadata (see documents.ts).
    expect(Object.keys(patches[0].requestBody.content)).toEqual(["application/apply-patch+yaml", "application/json-patch+json", "application/merge-patch+json"]);
    const v2 = JSON.parse(openApiDocuments().v2.body) as Record<string, any>;
    expect(v2.definitions[definitionOf(r)]["x-kubernetes-group-version-kind"]).toEqual([gvk]);
  });

  it("every $ref resolves and the documents are valid OpenAPI 3.0 and Swagger 2.0", async () => {
    for (const key of openApiDocuments().v3.keys()) {
      const text = openApiDocuments().v3.get(key)!.body;
      const result = await new Validator().validate(JSON.parse(text) as Record<string, unknown>);
      expect(result.errors, key).toBeUndefined();
      expect(result.valid).toBe(true);
    }
    const v2 = await new Validator().validate(JSON.parse(openApiDocuments().v2.body) as Record<string, unknown>);
    expect(v2.errors).toBeUndefined();
    expect(v2.valid).toBe(true);
  }, 120_000);
});

describe("field validation", () => {
  const pod = definitions[definitionOf(resourceOf("pods"))]!;
  it.each([
    [{ spec: { containers: [{ name: "a", image: "i" }] } }, []],
    [{ spec: { containers: [{ name: "a", imagee: "i" }] } }, ['unknown field "spec.containers[0].imagee"']],
    [{ metadata: { labels: { a: "b" }, nam: "x" }, extra: 1 }, ['unknown field "metadata.nam"', 'unknown field "extra"']],
    [{ spec: { containers: "x" } }, ["json: cannot unmarshal string into Go struct field spec.containers of type []object"]],
    [{ spec: { terminationGracePeriodSeconds: "30" } }, ["json: cannot unmarshal string into Go struct field spec.terminationGracePeriodSeconds of type integer"]],
    [{ spec: { containers: [{ name: "a", resources: { requests: { cpu: 1, memory: "1Gi" } }, ports: [{ containerPort: 80 }] }] } }, []],
    [{ spec: { containers: [{ name: "a", readinessProbe: { httpGet: { port: "http" } } }] } }, []],
    [{ spec: { $setElementOrder: [], containers: [{ name: "a", $patch: "delete" }] } }, []],
    [{ spec: null, status: { phase: "Running" } }, []],
  ])("%j → %j", (object, problems) => {
    expect(fieldProblems(object, pod)).toEqual(problems);
  });

  it("Strict throws kube-apiserver's 400, Warn returns the problems, Ignore nothing", () => {
    const bad = { kind: "ConfigMap", dataa: {} };
    expect(() => validateFields(resourceOf("configmaps"), bad, "Strict")).toThrow('ConfigMap in version "v1" cannot be handled as a ConfigMap: strict decoding error: unknown field "dataa"');
    expect(validateFields(resourceOf("configmaps"), bad, "Warn")).toEqual(['unknown field "dataa"']);
    expect(validateFields(resourceOf("configmaps"), bad, "Ignore")).toEqual([]);
  });
});
