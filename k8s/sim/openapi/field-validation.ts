// Server-side field validation (the `fieldValidation` query parameter) against the same schemas
// the server publishes: unknown fields and values of the wrong JSON type, worded as
// kube-apiserver's strict decoder words them (`unknown field "spec.containers[0].imagee"`).
// Strict rejects the request (400), Warn (the default, as on kube-apiserver) answers with
// `Warning` headers, Ignore checks nothing. Patch bodies are partial objects: keys starting
// with `$` (strategic-merge directives) are skipped, JSON patches are not checked.
import { ApiError, errors } from "../objects.ts";
import type { ResourceType } from "../resources.ts";
import { definitionOf, definitions, type Schema } from "./documents.ts";

export type FieldValidation = "Ignore" | "Warn" | "Strict";

export function fieldValidationOf(params: URLSearchParams): FieldValidation {
  const raw = params.get("fieldValidation");
  if (raw === null || raw === "") return "Warn";
  if (raw === "Ignore" || raw === "Warn" || raw === "Strict") return raw;
  throw errors.badRequest(`fieldValidation: Invalid value: ${JSON.stringify(raw)}: must be one of Ignore, Warn or Strict`);
}

const jsonType = (value: unknown) => (Array.isArray(value) ? "array" : typeof value === "object" ? "object" : typeof value);

function resolve(schema: Schema): Schema {
  let current = schema;
  for (let depth = 0; depth < 8; depth++) {
    const ref = current.$ref ?? current.allOf?.[0]?.$ref;
    if (typeof ref !== "string") return current;
    current = definitions[ref.slice("#/definitions/".length)] ?? {};
  }
  return current;
}

function typeMatches(schema: Schema, value: unknown): boolean {
  switch (schema.type) {
    case "string":
      return typeof value === "string" || (typeof value === "number" && (schema.format === "int-or-string" || schema["x-berth-accepts-number"] === true));
    case "integer":
      return typeof value === "number" && Number.isInteger(value);
    case "number":
      return typeof value === "number";
    case "boolean":
      return typeof value === "boolean";
    case "array":
      return Array.isArray(value);
    case "object":
      return jsonType(value) === "object";
    default:
      return true;
  }
}

/** Every problem in `value` against `schema`, as the strict decoder lists them. */
export function fieldProblems(value: unknown, schema: Schema, path = ""): string[] {
  const resolved = resolve(schema);
  if (value === null || value === undefined || resolved["x-kubernetes-preserve-unknown-fields"]) return [];
  if (!typeMatches(resolved, value)) {
    const want = resolved.type === "array" ? `[]${resolve(resolved.items ?? {}).type ?? "object"}` : resolved.type;
    return [`json: cannot unmarshal ${jsonType(value)} into Go struct field ${path || "."} of type ${want}`];
  }
  if (resolved.type === "array") return (value as unknown[]).flatMap((item, i) => fieldProblems(item, resolved.items ?? {}, `${path}[${i}]`));
  if (resolved.type !== "object") return [];
  const problems: string[] = [];
  for (const [key, child] of Object.entries(value as Record<string, unknown>)) {
    if (key.startsWith("$")) continue;
    const childPath = path ? `${path}.${key}` : key;
    const property = resolved.properties?.[key] ?? (resolved.additionalProperties && typeof resolved.additionalProperties === "object" ? resolved.additionalProperties : undefined);
    if (property) problems.push(...fieldProblems(child, property, childPath));
    else if (resolved.properties) problems.push(`unknown field ${JSON.stringify(childPath)}`);
  }
  return problems;
}

/**
 * Checks a request body for `resource`: throws the 400 kube-apiserver answers under Strict,
 * returns the warnings to send under Warn, nothing under Ignore.
 */
export function validateFields(resource: ResourceType, body: unknown, mode: FieldValidation): string[] {
  if (mode === "Ignore") return [];
  const schema = definitions[definitionOf(resource)];
  if (!schema) return [];
  const problems = fieldProblems(body, schema);
  if (problems.length === 0) return [];
  if (mode === "Strict") {
    const { kind, version } = resource;
    throw new ApiError(400, "BadRequest", `${kind} in version "${version}" cannot be handled as a ${kind}: strict decoding error: ${problems.join(", ")}`);
  }
  return problems;
}
