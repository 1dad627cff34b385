// Requests for one OpenAPI operation, as fast-check arbitraries: valid ones built from the
// operation's declared parameters and request body schema, and mutations of those (a
// field dropped, a wrong type, a value out of bounds, an unknown field, a huge string,
// a bad path id, a bad query value, a bad header, a bad content type, damaged JSON).
// A request is a plain object, so fast-check prints a shrunk counterexample readably;
// `toHttp` turns it into what is sent.
import fc from "fast-check";
import type { OpenApiDocument, Operation, Parameter } from "./openapi-document.ts";
import { arbitraryFromSchema } from "./schema-arbitrary.ts";

export type Caller = "admin" | "viewer" | "agent" | "anonymous";

export interface FuzzRequest {
  caller: Caller;
  /** Path parameter values, not yet encoded. */
  path: Record<string, string>;
  /** Query pairs in order; a name repeats for an array. */
  query: Array<[string, string]>;
  headers: Record<string, string>;
  /** `text` is sent as is; otherwise `value` as JSON. No content type: the header is left out. */
  body?: { contentType: string | null; value?: unknown; text?: string };
  /** What was done to a valid request, if anything (printed with a counterexample). */
  mutation?: string;
}

/** Existing resources to aim at, so that valid requests reach past the 404. */
export interface KnownIds {
  /** For a path parameter of an operation; empty when none is known. */
  path(operation: Operation, parameter: string): string[];
  /** For a query parameter or a top-level body field of this name (projectId, deploymentId, …). */
  field(name: string): string[];
}

/**
 * Tokens only the server hands out (a page cursor, an ETag) or that change what a request means (a
 * replay key): a random one is refused or replays, so a valid request carries one only 1 in 4 times.
 */
const OPAQUE = new Set(["cursor", "if-match", "idempotency-key"]);

/** Values that break a field of any type, chosen to cross the bounds schemas commonly declare. */
const WRONG_TYPES: unknown[] = [null, true, 0, -1, 1.5, "", "x", "1", [], [1], {}, { a: 1 }];
const OUT_OF_BOUNDS: unknown[] = [
  -1, 0, -(2 ** 31) - 1, 2 ** 31, 2 ** 53, Number.MAX_SAFE_INTEGER + 2, 1e308, -1e308, 5e-324, 0.5,
  "", " ", "x".repeat(300), "x".repeat(5000), "\u0000", "😀".repeat(70), Array.from({ length: 300 }, () => 1),
];
const BAD_IDS = ["x", "0", "-1", "prj_", "dep_0000000000000000000x", "%00", "..", "%2F", "%25", "a".repeat(65), "a".repeat(300), "😀", "null", "undefined", "'or'1'='1", "%E2%80%AE"];
const BAD_QUERY = ["", "abc", "-1", "0", "1e999", "NaN", "0x10", " 1", "1.5", "9007199254740993", "true", "null", "[]", "x".repeat(600), "\u0000"];
const BAD_CONTENT_TYPES = [null, "text/plain", "application/xml", "application/x-www-form-urlencoded", "application/json-patch+json", "multipart/form-data; boundary=x", "json", "*/*"];
const JSON_DAMAGE = ["{", "}", "[", "]", ",", ":", '"', "\\", "\u0000", "\\ud800", "1e999", "NaN", "/*", "\n", "\uFEFF"];

type Json = unknown;
type Path = Array<string | number>;

function isObject(value: unknown): value is Record<string, Json> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/** Every location inside a JSON value (the root included), breadth first. */
function locations(root: Json): Path[] {
  const out: Path[] = [];
  const queue: Array<{ at: Path; value: Json }> = [{ at: [], value: root }];
  while (queue.length > 0) {
    const { at, value } = queue.shift()!;
    out.push(at);
    const children: Array<[string | number, Json]> = Array.isArray(value) ? value.map((v, i) => [i, v]) : isObject(value) ? Object.entries(value) : [];
    for (const [k, v] of children) queue.push({ at: [...at, k], value: v });
  }
  return out;
}

/** A copy of `root` with the value at `at` replaced (`undefined`: removed). */
function withAt(root: Json, at: Path, replacement: Json | undefined): Json {
  if (at.length === 0) return replacement;
  const [head, ...rest] = at;
  if (Array.isArray(root)) {
    const copy = [...root];
    if (rest.length === 0 && replacement === undefined) copy.splice(head as number, 1);
    else copy[head as number] = withAt(root[head as number], rest, replacement);
    return copy;
  }
  const copy: Record<string, Json> = { ...(root as Record<string, Json>) };
  if (rest.length === 0 && replacement === undefined) delete copy[head as string];
  else copy[head as string] = withAt((root as Record<string, Json>)[head as string], rest, replacement);
  return copy;
}

function valueAt(root: Json, at: Path): Json {
  return at.reduce<Json>((v, k) => (v as Record<string | number, Json>)[k], root);
}

/** The valid-request arbitrary of one operation. */
export function validRequest(
  doc: OpenApiDocument,
  op: Operation,
  knownIds: KnownIds,
  callers: fc.Arbitrary<Caller>,
  /** Bodies known to be admitted, mixed in with the generated ones (the schema cannot say everything the server checks). */
  admitted?: fc.Arbitrary<unknown>,
): fc.Arbitrary<FuzzRequest> {
  const parameter = (p: Parameter): fc.Arbitrary<unknown> => {
    // A header value must be visible ASCII (fetch's Headers refuses anything else before it is sent).
    const fromSchema = p.in === "header" ? visibleAscii((p.schema as { maxLength?: number }).maxLength ?? 64) : arbitraryFromSchema(doc, p.schema);
    if (p.in !== "path") return mostlyKnown(knownIds.field(p.name), fromSchema);
    // An empty segment would be another route's URL, not this operation with a bad id.
    return mostlyKnown(knownIds.path(op, p.name), fromSchema.filter((v) => v !== ""));
  };
  const byLocation = (where: Parameter["in"]) => op.parameters.filter((p) => p.in === where);
  const present = (list: Parameter[]) =>
    fc.record(
      Object.fromEntries(
        list.map((p) => [p.name, OPAQUE.has(p.name.toLowerCase()) ? fc.option(parameter(p), { freq: 3, nil: undefined }) : parameter(p)]),
      ),
      { requiredKeys: list.filter((p) => p.required || OPAQUE.has(p.name.toLowerCase())).map((p) => p.name) },
    );

  /** Top-level id fields of a body mostly set to existing resources (when the body has them). */
  const aimed = (value: unknown, pick: number): unknown => {
    if (!isObject(value) || pick % 4 === 0) return value;
    const out = { ...value };
    for (const key of Object.keys(out)) {
      const known = knownIds.field(key);
      if (known.length > 0 && typeof out[key] === "string") out[key] = known[pick % known.length];
    }
    return out;
  };
  const mediaTypes = Object.entries(op.requestBody?.content ?? {});
  const generated: fc.Arbitrary<FuzzRequest["body"]> =
    mediaTypes.length === 0
      ? fc.constant(undefined)
      : fc.oneof(
          ...mediaTypes.map(([contentType, media]) =>
            fc.tuple(arbitraryFromSchema(doc, media.schema ?? true), fc.nat()).map(([value, pick]) => ({ contentType, value: aimed(value, pick) })),
          ),
        );
  const body =
    admitted && mediaTypes.length > 0 ? fc.oneof(generated, admitted.map((value) => ({ contentType: mediaTypes[0]![0], value }))) : generated;

  return fc
    .record({ caller: callers, path: present(byLocation("path")), query: present(byLocation("query")), headers: present(byLocation("header")), body })
    .map(({ caller, path, query, headers, body }) => {
      const request: FuzzRequest = {
        caller,
        path: Object.fromEntries(Object.entries(path).map(([k, v]) => [k, String(v)])),
        query: Object.entries(query).flatMap(([name, v]): Array<[string, string]> => (v === null || v === undefined ? [] : Array.isArray(v) ? v.map((x) => [name, String(x)]) : [[name, String(v)]])),
        headers: Object.fromEntries(Object.entries(headers).flatMap(([k, v]) => (v === undefined ? [] : [[k, String(v)]]))),
      };
      if (body) request.body = body;
      return request;
    });
}

/** Mostly an existing resource, so a valid request reaches past the 404; sometimes anything the schema allows. */
function mostlyKnown(known: string[], other: fc.Arbitrary<unknown>): fc.Arbitrary<unknown> {
  return known.length > 0 ? fc.oneof({ arbitrary: fc.constantFrom(...known), weight: 3 }, { arbitrary: other, weight: 1 }) : other;
}

function visibleAscii(maxLength: number): fc.Arbitrary<string> {
  const char = fc.integer({ min: 0x21, max: 0x7e }).map((code) => String.fromCharCode(code));
  return fc.string({ unit: char, minLength: 1, maxLength: Math.min(maxLength, 40) });
}

/** A valid request with one thing broken; which things apply depends on what the operation takes. */
export function mutatedRequest(valid: fc.Arbitrary<FuzzRequest>, op: Operation): fc.Arbitrary<FuzzRequest> {
  const hasBody = op.requestBody !== undefined;
  const query = op.parameters.filter((p) => p.in === "query").map((p) => p.name);
  const headers = op.parameters.filter((p) => p.in === "header").map((p) => p.name);
  const pathNames = op.parameters.filter((p) => p.in === "path").map((p) => p.name);
  type Edit = (r: FuzzRequest) => FuzzRequest;
  const edits: Array<fc.Arbitrary<Edit>> = [];
  const inBody = (name: string, change: (root: Json, at: Path) => Json) =>
    fc.nat().map((pick): Edit => (r) => {
      if (r.body?.value === undefined) return r;
      const all = locations(r.body.value);
      const at = all[pick % all.length]!;
      return { ...r, body: { ...r.body, value: change(r.body.value, at) }, mutation: `${name} at /${at.join("/")}` };
    });

  if (hasBody) {
    edits.push(inBody("dropped field", (root, at) => withAt(root, at, undefined)));
    edits.push(fc.constantFrom(...WRONG_TYPES).chain((bad) => inBody(`wrong type ${JSON.stringify(bad)}`, (root, at) => withAt(root, at, bad))));
    edits.push(fc.constantFrom(...OUT_OF_BOUNDS).chain((bad) => inBody(`out of bounds ${JSON.stringify(bad).slice(0, 20)}`, (root, at) => withAt(root, at, bad))));
    edits.push(
      fc.constantFrom("colour", "__proto__", "constructor", "", "a/b", "~1").chain((key) =>
        inBody(`unknown field ${JSON.stringify(key)}`, (root, at) => {
          const target = valueAt(root, at);
          if (!isObject(target)) return root;
          const grown: Record<string, Json> = { ...target };
          Object.defineProperty(grown, key, { value: 1, enumerable: true, writable: true, configurable: true });
          return withAt(root, at, grown);
        }),
      ),
    );
    // 100 KB stays under the body limit (the field's own bound must refuse it); 2 MB is over it (413).
    edits.push(fc.constantFrom(100_000, 2_000_000).chain((size) => inBody(`huge string of ${size}`, (root, at) => withAt(root, at, "x".repeat(size)))));
    edits.push(
      fc.constantFrom(...BAD_CONTENT_TYPES).map((contentType): Edit => (r) => ({ ...r, body: { ...(r.body ?? { value: {} }), contentType }, mutation: `content type ${contentType}` })),
    );
    edits.push(
      fc.tuple(fc.nat(), fc.constantFrom(...JSON_DAMAGE), fc.boolean()).map(([at, text, cut]): Edit => (r) => {
        const json = JSON.stringify(r.body?.value ?? {});
        const i = at % (json.length + 1);
        const damaged = cut ? json.slice(0, i) : json.slice(0, i) + text + json.slice(i);
        return { ...r, body: { contentType: r.body?.contentType ?? "application/json", text: damaged }, mutation: `invalid JSON ${cut ? "cut" : "insert"} at ${i}` };
      }),
    );
  } else if (op.method !== "GET" && op.method !== "HEAD") {
    // (fetch cannot send a GET or HEAD with a body at all.)
    edits.push(fc.jsonValue({ maxDepth: 2 }).map((value): Edit => (r) => ({ ...r, body: { contentType: "application/json", value }, mutation: "a body where none is taken" })));
  }
  if (pathNames.length > 0) {
    edits.push(
      fc.tuple(fc.constantFrom(...pathNames), fc.oneof(fc.constantFrom(...BAD_IDS), fc.string({ unit: "binary", minLength: 1, maxLength: 20 }))).map(
        ([name, id]): Edit => (r) => ({ ...r, path: { ...r.path, [name]: id }, mutation: `bad path ${name}` }),
      ),
    );
  }
  const queryNames = query.length > 0 ? query : ["limit"];
  edits.push(
    fc.tuple(fc.constantFrom(...queryNames), fc.constantFrom(...BAD_QUERY), fc.boolean()).map(([name, value, repeat]): Edit => (r) => ({
      ...r,
      query: repeat ? [...r.query, [name, value], [name, value]] : [...r.query.filter(([n]) => n !== name), [name, value]],
      mutation: `bad query ${name}${repeat ? " repeated" : ""}`,
    })),
  );
  const headerNames = [...headers, "if-match", "idempotency-key", "x-request-id"];
  edits.push(
    fc.tuple(fc.constantFrom(...headerNames), fc.constantFrom("", "garbage", '"-1"', "W/\"1\"", "*", "x".repeat(300), "\t")).map(([name, value]): Edit => (r) => ({
      ...r,
      headers: { ...r.headers, [name]: value },
      mutation: `bad header ${name}`,
    })),
  );
  return fc.tuple(valid, fc.oneof(...edits)).map(([request, edit]) => edit(request));
}

/** Path, query string and init for app.request. */
export function toHttp(op: Operation, request: FuzzRequest, tokens: Record<Exclude<Caller, "anonymous">, string>): { url: string; init: RequestInit } {
  const path = op.path.replace(/\{([^}]+)\}/g, (_, name: string) => encodeURIComponent(request.path[name] ?? ""));
  const search = new URLSearchParams(request.query).toString();
  const headers: Record<string, string> = { ...request.headers };
  if (request.caller !== "anonymous") headers.authorization = `Bearer ${tokens[request.caller]}`;
  let body: string | undefined;
  if (request.body) {
    body = request.body.text ?? JSON.stringify(request.body.value);
    if (request.body.contentType !== null) headers["content-type"] = request.body.contentType;
  }
  return { url: search ? `${path}?${search}` : path, init: { method: op.method, headers, body } };
}
