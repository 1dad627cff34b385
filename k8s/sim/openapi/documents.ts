// The OpenAPI documents the simulated API server serves, built once from definitions.json and
// resources.ts: the /openapi/v3 index (`paths: { "api/v1": { serverRelativeURL } }`), one v3
// document per group-version (its paths and every schema they reach) and the /openapi/v2
// document (JSON). Kinds carry `x-kubernetes-group-version-kind` (kubectl explain finds a
// kind's schema by it) and operations `x-kubernetes-action`; the write operations list the
// `fieldValidation` parameter, which tells kubectl the server validates fields itself, so
// `kubectl apply|create|replace` send `fieldValidation=Strict` instead of validating locally.
// Format: https://kubernetes.io/docs/concepts/overview/kubernetes-api/#openapi-v3
import { createHash } from "node:crypto";
import { readFileSync } from "node:fs";
import { groupVersion, RESOURCES, versionInfo, type ResourceType } from "../resources.ts";

export type Schema = Record<string, any>;

interface DefinitionsFile {
  source: string;
  definitions: Record<string, Schema>;
}

const file = JSON.parse(readFileSync(new URL("./definitions.json", import.meta.url), "utf8")) as DefinitionsFile;
export const definitions: Readonly<Record<string, Schema>> = file.definitions;
export const definitionsSource = file.source;

const STATUS = "io.k8s.apimachinery.pkg.apis.meta.v1.Status";

/** `io.k8s.api.core.v1.Pod` for core/v1 Pod: the definition name of a served kind. */
export function definitionOf(resource: Pick<ResourceType, "group" | "version" | "kind">): string {
  const pkg = resource.group === "" ? "core" : resource.group.split(".")[0];
  return `io.k8s.api.${pkg}.${resource.version}.${resource.kind}`;
}

const gvk = (r: ResourceType) => ({ group: r.group, version: r.version, kind: r.kind });

/** Definition names `roots` reach through `$ref`, roots included. */
function reachable(roots: readonly string[]): string[] {
  const seen = new Set<string>();
  const visit = (name: string) => {
    if (seen.has(name)) return;
    if (!definitions[name]) throw new Error(`no OpenAPI definition ${name}`);
    seen.add(name);
    JSON.stringify(definitions[name], (key, value) => {
      if (key === "$ref" && typeof value === "string") visit(value.slice("#/definitions/".length));
      return value;
    });
  };
  roots.forEach(visit);
  return [...seen].sort();
}

/** The schemas of `names`, refs pointing at `prefix`, served kinds tagged with their group-version-kind. */
function schemasOf(names: readonly string[], prefix: string): Record<string, Schema> {
  const kinds = new Map(RESOURCES.map((r) => [definitionOf(r), r]));
  const out: Record<string, Schema> = {};
  for (const name of names) {
    const text = JSON.stringify(definitions[name]).replaceAll('"#/definitions/', `"${prefix}`);
    const schema = JSON.parse(text) as Schema;
    const kind = kinds.get(name);
    if (kind) schema["x-kubernetes-group-version-kind"] = [gvk(kind)];
    out[name] = schema;
  }
  return out;
}

const query = (name: string, description: string, type = "string") => ({ name, in: "query", description, schema: { type } });
const PARAMETERS = {
  pretty: query("pretty", "If 'true', then the output is pretty printed. Parsed like Go's strconv.ParseBool."),
  dryRun: query("dryRun", "When present, indicates that modifications should not be persisted. The only valid value is All."),
  fieldManager: query("fieldManager", "A name associated with the actor or entity that is making these changes."),
  fieldValidation: query(
    "fieldValidation",
    "How the server treats fields it does not know or that are duplicated: Ignore, Warn or Strict (reject the request naming each such field).",
  ),
  force: query("force", "Force is going to \"force\" Apply requests: conflicting fields owned by other managers are taken over. Only for apply patches.", "boolean"),
  watch: query("watch", "Watch for changes to the described resources and return them as a stream of add, update, and remove notifications.", "boolean"),
  labelSelector: query("labelSelector", "A selector to restrict the list of returned objects by their labels."),
  fieldSelector: query("fieldSelector", "A selector to restrict the list of returned objects by their fields."),
  resourceVersion: query("resourceVersion", "Where a list starts or a watch resumes."),
  timeoutSeconds: query("timeoutSeconds", "Timeout for the list/watch call.", "integer"),
  limit: query("limit", "The maximum number of responses to return for a list call.", "integer"),
  continue: query("continue", "The continue token of a previous list call."),
  gracePeriodSeconds: query("gracePeriodSeconds", "The duration in seconds before the object should be deleted.", "integer"),
  propagationPolicy: query("propagationPolicy", "Whether and how garbage collection will be performed: Orphan, Background or Foreground."),
};
const pathParameter = (name: string) => ({ name, in: "path", required: true, description: `name of the ${name === "name" ? "object" : name}`, schema: { type: "string" } });

// The server takes strategic merge patches too, but the schemas lack the upstream patch
// metadata (x-kubernetes-patch-merge-key/-strategy), so a document offering them would make
// `kubectl apply` treat every list as atomic and never delete a list item it removed. Without
// them listed, kubectl computes the patch from its built-in types, as correct as upstream.
const PATCH_TYPES = ["application/apply-patch+yaml", "application/json-patch+json", "application/merge-patch+json"];

type Ref = (name: string) => Schema;

function operation(r: ResourceType, action: string, verb: string, ref: Ref, extra: Schema = {}): Schema {
  const kindRef = ref(definitionOf(r));
  return {
    operationId: `${verb}${r.kind}`,
    tags: [groupVersion(r)],
    description: `${action} ${r.kind}`,
    responses: { "200": { description: "OK", schema: kindRef }, "401": { description: "Unauthorized" } },
    "x-kubernetes-action": action,
    "x-kubernetes-group-version-kind": gvk(r),
    ...extra,
  };
}

/** The operations of one resource, in a shape both document versions turn into their own. */
function resourcePaths(r: ResourceType, ref: Ref): Record<string, Schema> {
  const prefix = r.group === "" ? `/api/${r.version}` : `/apis/${r.group}/${r.version}`;
  const collection = r.namespaced ? `${prefix}/namespaces/{namespace}/${r.resource}` : `${prefix}/${r.resource}`;
  const scope = r.namespaced ? [pathParameter("namespace")] : [];
  const body = (name: string) => ({ name: "body", required: true, schema: ref(name) });
  const write = [PARAMETERS.dryRun, PARAMETERS.fieldManager, PARAMETERS.fieldValidation];
  const listing = [PARAMETERS.labelSelector, PARAMETERS.fieldSelector, PARAMETERS.limit, PARAMETERS.continue, PARAMETERS.resourceVersion, PARAMETERS.timeoutSeconds, PARAMETERS.watch];
  const paths: Record<string, Schema> = {
    [collection]: {
      parameters: [...scope, PARAMETERS.pretty],
      get: operation(r, "list", "list", ref, { parameters: listing }),
      post: operation(r, "post", "create", ref, { parameters: write, body: body(definitionOf(r)) }),
      delete: operation(r, "deletecollection", "deleteCollection", ref, { parameters: [...listing.slice(0, 4), PARAMETERS.gracePeriodSeconds, PARAMETERS.propagationPolicy] }),
    },
    [`${collection}/{name}`]: {
      parameters: [pathParameter("name"), ...scope, PARAMETERS.pretty],
      get: operation(r, "get", "read", ref),
      put: operation(r, "put", "replace", ref, { parameters: write, body: body(definitionOf(r)) }),
      patch: operation(r, "patch", "patch", ref, { parameters: [...write, PARAMETERS.force], body: { name: "body", required: true, schema: { type: "object" } }, consumes: PATCH_TYPES }),
      delete: operation(r, "delete", "delete", ref, { parameters: [PARAMETERS.dryRun, PARAMETERS.gracePeriodSeconds, PARAMETERS.propagationPolicy], responses: { "200": { description: "OK", schema: ref(definitionOf(r)) } } }),
    },
  };
  if (r.namespaced) paths[`${prefix}/${r.resource}`] = { parameters: [PARAMETERS.pretty], get: operation(r, "list", "listForAllNamespaces", ref, { parameters: listing }) };
  return paths;
}

/** A v2-shaped operation (body parameter, `consumes`, `responses.*.schema`) as OpenAPI 3. */
function toV3Operation(op: Schema): Schema {
  const { body, consumes, responses, ...rest } = op;
  const json = (schema: Schema) => ({ "application/json": { schema }, "application/yaml": { schema } });
  return {
    ...rest,
    ...(body && {
      requestBody: { required: true, content: consumes ? Object.fromEntries((consumes as string[]).map((type) => [type, { schema: body.schema }])) : json(body.schema) },
    }),
    responses: Object.fromEntries(
      Object.entries(responses as Record<string, Schema>).map(([code, response]) => [code, { description: response.description, ...(response.schema && { content: json(response.schema) }) }]),
    ),
  };
}

function toV2Operation(op: Schema): Schema {
  const { body, consumes, parameters = [], ...rest } = op;
  const v2Parameter = (p: Schema) => {
    const { schema, ...others } = p;
    return { ...others, type: schema.type };
  };
  return {
    ...rest,
    consumes: consumes ?? ["*/*"],
    produces: ["application/json", "application/yaml"],
    parameters: [...(body ? [{ ...body, in: "body" }] : []), ...(parameters as Schema[]).map(v2Parameter)],
  };
}

const groupVersions = () => [...new Map(RESOURCES.map((r) => [groupVersion(r), r])).values()].map((r) => ({ group: r.group, version: r.version }));
const pathKey = (gv: { group: string; version: string }) => (gv.group === "" ? `api/${gv.version}` : `apis/${gv.group}/${gv.version}`);
const info = { title: "Kubernetes", version: versionInfo.gitVersion, description: `The simulated cluster's API (schemas from ${definitionsSource})` };

function buildV3(gv: { group: string; version: string }): Schema {
  const types = RESOURCES.filter((r) => r.group === gv.group && r.version === gv.version);
  const ref: Ref = (name) => ({ $ref: `#/components/schemas/${name}` });
  const paths: Record<string, Schema> = {};
  for (const r of types) {
    for (const [path, item] of Object.entries(resourcePaths(r, ref))) {
      paths[path] = Object.fromEntries(Object.entries(item).map(([key, value]) => [key, key === "parameters" ? value : toV3Operation(value)]));
    }
  }
  return { openapi: "3.0.0", info, paths, components: { schemas: schemasOf(reachable([...types.map(definitionOf), STATUS]), "#/components/schemas/") } };
}

function buildV2(): Schema {
  const ref: Ref = (name) => ({ $ref: `#/definitions/${name}` });
  const paths: Record<string, Schema> = {};
  for (const r of RESOURCES) {
    for (const [path, item] of Object.entries(resourcePaths(r, ref))) {
      paths[path] = Object.fromEntries(Object.entries(item).map(([key, value]) => [key, key === "parameters" ? value.map((p: Schema) => ({ ...p, type: p.schema.type, schema: undefined })) : toV2Operation(value)]));
    }
  }
  return JSON.parse(JSON.stringify({ swagger: "2.0", info, paths, definitions: schemasOf(reachable([...RESOURCES.map(definitionOf), STATUS]), "#/definitions/") })) as Schema;
}

export interface ServedDocument {
  body: string;
  /** Content hash: the `hash` query of the index's URLs and the ETag. */
  hash: string;
}

function served(document: Schema): ServedDocument {
  const body = JSON.stringify(document);
  return { body, hash: createHash("sha512").update(body).digest("hex").slice(0, 128).toUpperCase() };
}

export interface OpenApiDocuments {
  /** `/openapi/v3`. */
  index: ServedDocument;
  /** `api/v1`, `apis/apps/v1`… → the v3 document of that group-version. */
  v3: Map<string, ServedDocument>;
  v2: ServedDocument;
}

let built: OpenApiDocuments | undefined;

/** Built on first use (a few ms), then shared by every server in the process. */
export function openApiDocuments(): OpenApiDocuments {
  if (built) return built;
  const v3 = new Map(groupVersions().map((gv) => [pathKey(gv), served(buildV3(gv))]));
  const index = served({ paths: Object.fromEntries([...v3].map(([key, doc]) => [key, { serverRelativeURL: `/openapi/v3/${key}?hash=${doc.hash}` }])) });
  built = { index, v3, v2: served(buildV2()) };
  return built;
}
