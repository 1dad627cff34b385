// The committed OpenAPI document: current with the routes, valid OpenAPI 3.1 with every
// $ref resolving, and complete per operation (id, security, problem+json errors).
import { readFile } from "node:fs/promises";
import { Validator } from "@seriousme/openapi-schema-validator";
import type { OpenAPIObject, OperationObject, ResponseObject } from "openapi3-ts/oas31";
import { beforeAll, describe, expect, it } from "vitest";
import { renderOpenApiJson } from "../../src/api/openapi-file.ts";

const COMMITTED = new URL("../../openapi/openapi.json", import.meta.url);
const METHODS = ["get", "put", "post", "delete", "options", "head", "patch", "trace"] as const;
/** Operations reachable without a bearer key: the probes, and the agent's join-token exchange. */
const PUBLIC_PATHS = new Set(["/healthz", "/readyz", "/v1/agent/register"]);
/** Operations that answer no client error at all. */
const NO_CLIENT_ERRORS = new Set(["/healthz", "/readyz"]);

let committedText: string;
let doc: OpenAPIObject;

beforeAll(async () => {
  committedText = await readFile(COMMITTED, "utf8");
  doc = JSON.parse(committedText) as OpenAPIObject;
});

function operations(document: OpenAPIObject): Array<{ label: string; path: string; op: OperationObject }> {
  return Object.entries(document.paths ?? {}).flatMap(([path, item]) =>
    METHODS.filter((method) => item[method]).map((method) => ({
      label: `${method.toUpperCase()} ${path}`,
      path,
      op: item[method] as OperationObject,
    })),
  );
}

/** Every `$ref` in the document, with the JSON path where it occurs. */
function collectRefs(value: unknown, at = "#", found: Array<{ at: string; ref: string }> = []) {
  if (Array.isArray(value)) value.forEach((item, i) => collectRefs(item, `${at}/${i}`, found));
  else if (value && typeof value === "object") {
    for (const [key, child] of Object.entries(value)) {
      if (key === "$ref" && typeof child === "string") found.push({ at, ref: child });
      else collectRefs(child, `${at}/${key.replaceAll("~", "~0").replaceAll("/", "~1")}`, found);
    }
  }
  return found;
}

function resolvePointer(document: unknown, ref: string): unknown {
  if (!ref.startsWith("#/")) return undefined;
  return ref
    .slice(2)
    .split("/")
    .map((part) => part.replaceAll("~1", "/").replaceAll("~0", "~"))
    .reduce<unknown>((node, key) => (node && typeof node === "object" ? (node as Record<string, unknown>)[key] : undefined), document);
}

describe("openapi/openapi.json", () => {
  it("is what the routes generate now", async () => {
    const generated = await renderOpenApiJson();
    expect(committedText, "openapi/openapi.json is stale: run `npm run openapi` and commit the result").toBe(generated);
  });

  it("is a valid OpenAPI 3.1 document", async () => {
    const validator = new Validator();
    // A fresh parse: the validator may annotate the object it is given.
    const result = await validator.validate(JSON.parse(committedText) as Record<string, unknown>);
    expect(result.errors ?? [], JSON.stringify(result.errors, null, 2)).toEqual([]);
    expect(result.valid).toBe(true);
    expect(validator.version).toBe("3.1");
  });

  it("has every local $ref pointing at something that exists", () => {
    const refs = collectRefs(doc);
    expect(refs.length).toBeGreaterThan(0);
    const broken = refs.filter(({ ref }) => resolvePointer(doc, ref) === undefined);
    expect(broken).toEqual([]);
  });

  it("names each operation uniquely", () => {
    const ids = operations(doc).map(({ label, op }) => op.operationId ?? `<missing on ${label}>`);
    expect(ids.filter((id) => id.startsWith("<missing"))).toEqual([]);
    expect(new Set(ids).size).toBe(ids.length);
  });

  it("declares security on every operation; only the public ones leave it empty", () => {
    const schemes = Object.keys(doc.components?.securitySchemes ?? {});
    expect(schemes).toContain("bearerAuth");
    const wrong = operations(doc).flatMap(({ label, path, op }) => {
      if (!Array.isArray(op.security)) return [`${label}: no security`];
      if (op.security.length === 0) return PUBLIC_PATHS.has(path) ? [] : [`${label}: empty security on a protected route`];
      if (PUBLIC_PATHS.has(path)) return [`${label}: public route asks for ${JSON.stringify(op.security)}`];
      const unknown = op.security.flatMap((requirement) => Object.keys(requirement)).filter((name) => !schemes.includes(name));
      return unknown.length ? [`${label}: unknown security schemes ${unknown.join(", ")}`] : [];
    });
    expect(wrong).toEqual([]);
    // Every public route the test knows of still exists (so the allow-list cannot rot silently).
    const paths = new Set(operations(doc).map(({ path }) => path));
    expect([...PUBLIC_PATHS].filter((path) => !paths.has(path))).toEqual([]);
  });

  it("describes client errors as application/problem+json on every operation but the probes", () => {
    const missing = operations(doc)
      .filter(({ path }) => !NO_CLIENT_ERRORS.has(path))
      .filter(({ op }) =>
        !Object.entries(op.responses ?? {}).some(
          ([status, response]) =>
            /^4\d\d$/.test(status) && (response as ResponseObject).content?.["application/problem+json"] !== undefined,
        ),
      )
      .map(({ label }) => label);
    expect(missing).toEqual([]);
  });
});
