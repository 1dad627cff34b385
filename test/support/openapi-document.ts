// The committed OpenAPI document as test data: its operations in a flat list, `$ref`
// resolution for schema walkers, and an ajv (JSON Schema 2020-12, the dialect of
// OpenAPI 3.1) that validates a value against any schema in it, with every component
// registered so `$ref`s resolve.
import { readFileSync } from "node:fs";
import { Ajv2020, type ValidateFunction } from "ajv/dist/2020.js";
import addFormatsModule from "ajv-formats";

export type Schema = { [keyword: string]: any } | boolean;

export interface Parameter {
  name: string;
  in: "path" | "query" | "header" | "cookie";
  required?: boolean;
  schema: Schema;
  description?: string;
}

export interface MediaType {
  schema?: Schema;
}

export interface Operation {
  method: string;
  /** The path template, `{name}` for each path parameter. */
  path: string;
  operationId?: string;
  parameters: Parameter[];
  requestBody?: { required?: boolean; content: Record<string, MediaType> };
  responses: Record<string, { description?: string; content?: Record<string, MediaType> }>;
  /** `[]`: no credentials needed. */
  security?: unknown[];
}

export interface OpenApiDocument {
  openapi: string;
  paths: Record<string, Record<string, any>>;
  components: { schemas: Record<string, Schema>; [kind: string]: any };
}

const DOCUMENT_URL = new URL("../../openapi/openapi.json", import.meta.url);
const METHODS = ["get", "put", "post", "delete", "patch", "head", "options", "trace"];
/** The id the components are registered under in ajv (as `$defs`); `#/components/schemas/…` refs are rewritten to it. */
const DOCUMENT_ID = "berth-openapi.json";

export function loadOpenApiDocument(): OpenApiDocument {
  return JSON.parse(readFileSync(DOCUMENT_URL, "utf8")) as OpenApiDocument;
}

/** Every operation in the document, in document order; path-level parameters merged in. */
export function listOperations(doc: OpenApiDocument): Operation[] {
  const out: Operation[] = [];
  for (const [path, item] of Object.entries(doc.paths)) {
    const shared: Parameter[] = (item.parameters ?? []).map((p: unknown) => resolveRef(doc, p));
    for (const method of METHODS) {
      const op = item[method];
      if (!op) continue;
      const own: Parameter[] = (op.parameters ?? []).map((p: unknown) => resolveRef(doc, p));
      const names = new Set(own.map((p) => `${p.in}:${p.name}`));
      out.push({
        method: method.toUpperCase(),
        path,
        operationId: op.operationId,
        parameters: [...shared.filter((p) => !names.has(`${p.in}:${p.name}`)), ...own],
        requestBody: op.requestBody ? resolveRef(doc, op.requestBody) : undefined,
        responses: Object.fromEntries(Object.entries(op.responses ?? {}).map(([status, r]) => [status, resolveRef(doc, r)])),
        security: op.security ?? (doc as { security?: unknown[] }).security,
      });
    }
  }
  return out;
}

/** Follows `$ref`s (local JSON pointers only: the document has no others) until a value without one. */
export function resolveRef<T = any>(doc: OpenApiDocument, value: unknown): T {
  let current: any = value;
  for (let hops = 0; current && typeof current === "object" && typeof current.$ref === "string"; hops++) {
    if (hops > 32) throw new Error(`$ref cycle at ${current.$ref}`);
    current = pointer(doc, current.$ref);
  }
  return current as T;
}

function pointer(doc: OpenApiDocument, ref: string): unknown {
  if (!ref.startsWith("#/")) throw new Error(`only local $refs are supported, got ${ref}`);
  let current: any = doc;
  for (const raw of ref.slice(2).split("/")) {
    const segment = decodeURIComponent(raw).replace(/~1/g, "/").replace(/~0/g, "~");
    if (current === undefined || !(segment in current)) throw new Error(`$ref ${ref} points at nothing`);
    current = current[segment];
  }
  return current;
}

/** A copy of a schema whose component refs name the registered components, so ajv can compile it anywhere. */
function anchored(schema: Schema): Schema {
  if (Array.isArray(schema)) return schema.map(anchored) as unknown as Schema;
  if (!schema || typeof schema !== "object") return schema;
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(schema)) {
    out[key] = key === "$ref" && typeof value === "string" ? value.replace(/^#\/components\/schemas\//, `${DOCUMENT_ID}#/$defs/`) : anchored(value);
  }
  return out;
}

/** Validates values against the document's schemas; compiled validators are cached by schema object. */
export class SchemaValidator {
  private readonly ajv: Ajv2020;
  private readonly compiled = new WeakMap<object, ValidateFunction>();

  constructor(doc: OpenApiDocument) {
    // strict: unknown keywords are mistakes, except OpenAPI's own annotations.
    this.ajv = new Ajv2020({ strict: true, strictTypes: false, strictRequired: false, allErrors: true, validateFormats: true });
    this.ajv.addVocabulary(["example", "discriminator", "xml", "externalDocs", "x-internal"]);
    // ajv-formats is CommonJS; under ESM its default export is the module object on some loaders.
    const addFormats = ((addFormatsModule as unknown as { default?: unknown }).default ?? addFormatsModule) as (ajv: Ajv2020) => void;
    addFormats(this.ajv);
    this.ajv.addSchema({ $id: DOCUMENT_ID, $defs: anchored(doc.components.schemas) });
  }

  /** Null when the value is valid, else ajv's errors as one readable line each. */
  errors(schema: Schema, value: unknown): string[] | null {
    const validate = this.validator(schema);
    if (validate(value)) return null;
    return (validate.errors ?? []).map((e) => `${e.instancePath || "/"} ${e.message ?? e.keyword} ${JSON.stringify(e.params)}`);
  }

  private validator(schema: Schema): ValidateFunction {
    if (typeof schema === "boolean") return this.ajv.compile(schema);
    let validate = this.compiled.get(schema);
    if (!validate) {
      validate = this.ajv.compile(anchored(schema) as object);
      this.compiled.set(schema, validate);
    }
    return validate;
  }
}
