// The Kubernetes-API-compatible HTTP front of the simulated cluster (node:http, JSON answers):
// discovery (/version, /api, /apis, /api/v1, /apis/<group>/<version>), CRUD on every type in
// resources.ts, the four patch content types, list/watch with selectors and resourceVersion,
// Table output for kubectl, the subresources berth touches (status, scale, binding,
// eviction, log), and the OpenAPI documents (openapi/). What the simulator refuses by design
// (exec, attach, port-forward, proxies, metrics) answers the Status in unsupported.ts; query
// booleans are read as Go reads them (query.ts); write bodies are checked per fieldValidation. Watches answer 200 with headers flushed at once (client-node's Watch waits
// for them) and one JSON event per line; a resourceVersion older than the kept history gets
// an ERROR event carrying a 410 Expired Status, then the stream ends, as from kube-apiserver.
// Every request but /version and health checks is authenticated (authn.ts), authorized by RBAC
// (rbac.ts) and, when it writes, admitted by the stored ValidatingAdmissionPolicies
// (admission-policy.ts). With a TLS key and certificate it serves HTTPS: kubectl sends bearer
// tokens only over TLS.
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import { createServer as createTlsServer } from "node:https";
import type { AddressInfo, Socket } from "node:net";
import { parse as parseYaml } from "yaml";
import { admissionAttributes, validateAdmission, type Operation } from "./admission-policy.ts";
import { Authenticator, MASTERS, type StaticUser, type UserInfo } from "./authn.ts";
import { ApiError, errors, type KubeObject } from "./objects.ts";
import { authorize, forbidden, type RequestAttributes, type Verb } from "./rbac.ts";
import { jsonPatch, mergePatch, strategicMergePatch } from "./patch.ts";
import { decodeProtobufBody, PROTOBUF_CONTENT_TYPE } from "./protobuf.ts";
import type { DeleteOptions, PatchType, Registry, WriteOptions } from "./registry.ts";
import { coreVersions, findResource, groupDocument, groupList, groupVersion, resourceList, resourceOf, versionInfo, type ResourceType } from "./resources.ts";
import { formatLabelSelector, fromSelectorObject } from "./selectors.ts";
import { toTable } from "./tables.ts";
import { fieldValidationOf, validateFields } from "./openapi/field-validation.ts";
import { openApiDocuments, type ServedDocument } from "./openapi/documents.ts";
import { boolParam, checkBooleanParams, intParam } from "./query.ts";
import { METRICS_GROUP, metricsApiGroup, metricsResourceList, NO_METRICS, unsupportedError, unsupportedSubresource } from "./unsupported.ts";

export interface PodLogRequest {
  container?: string;
  previous: boolean;
  tailLines?: number;
  limitBytes?: number;
  sinceSeconds?: number;
  timestamps: boolean;
  follow: boolean;
}

/** Where container output lives (the kubelet). `read` throws an ApiError for a container with no log yet. */
export interface PodLogSource {
  read(pod: KubeObject, request: PodLogRequest): { text: string; follow?(onText: (text: string) => void, onEnd: () => void): () => void };
}

export interface ApiServerOptions {
  registry: Registry;
  logs?: PodLogSource;
  host?: string;
  /** 0 (the default) picks a free port. */
  port?: number;
  /** The superuser's bearer token, which every request must then carry; none: a request without credentials is the superuser (loopback only). */
  token?: string;
  /** Users known by static bearer tokens (RBAC decides what they may do). */
  users?: readonly StaticUser[];
  /** PEM key and certificate: serve HTTPS. */
  tls?: { key: string | Buffer; cert: string | Buffer };
  /** Request log, one line per request (method, path, status, ms). */
  log?: (line: string) => void;
  /** Called as each request arrives, before its body is read (benchmarks time the first write after a change). */
  onRequest?: (request: ObservedRequest) => void;
}

export interface ObservedRequest {
  method: string;
  /** Path without the query. */
  path: string;
  /** The query string with its `?`, or "". */
  search: string;
  /** `performance.now()` of this process when the request arrived. */
  at: number;
}

export interface ApiServer {
  url: string;
  close(): Promise<void>;
}

const MAX_BODY_BYTES = 16 * 1024 * 1024;

const PATCH_TYPES: Record<string, PatchType> = {
  "application/merge-patch+json": "merge",
  "application/json-patch+json": "json",
  "application/strategic-merge-patch+json": "strategic",
  "application/apply-patch+yaml": "apply",
  "application/apply-patch+json": "apply",
};

interface Target {
  resource: ResourceType;
  namespace?: string;
  name?: string;
  subresource?: string;
  watchPath: boolean;
}

function readBody(req: IncomingMessage): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    req.on("data", (chunk: Buffer) => {
      size += chunk.length;
      if (size > MAX_BODY_BYTES) {
        reject(new ApiError(413, "RequestEntityTooLarge", "the request body is too large"));
        req.destroy();
      } else chunks.push(chunk);
    });
    req.on("end", () => resolve(Buffer.concat(chunks)));
    req.on("error", reject);
  });
}

/** The object in a POST or PUT body: the one place a decoder for another content type plugs in. */
async function readObject(req: IncomingMessage, contentType: string): Promise<unknown> {
  return parseBody(await readBody(req), contentType);
}

function parseBody(body: Buffer, contentType: string): unknown {
  if (contentType.startsWith(PROTOBUF_CONTENT_TYPE)) return decodeProtobufBody(body);
  const text = body.toString("utf8");
  if (text.trim() === "") throw errors.badRequest("the request body is empty");
  try {
    return contentType.includes("yaml") ? parseYaml(text) : JSON.parse(text);
  } catch (error) {
    throw errors.badRequest(`the body of the request could not be decoded: ${(error as Error).message}`);
  }
}

/** `warnings` become `Warning: 299 - "…"` headers, which kubectl prints as "Warning: …". */
function send(res: ServerResponse, code: number, body: unknown, warnings: readonly string[] = []): void {
  const text = JSON.stringify(body);
  res.writeHead(code, {
    "Content-Type": "application/json",
    "Content-Length": Buffer.byteLength(text),
    ...(warnings.length > 0 && { Warning: warnings.map((w) => `299 - ${JSON.stringify(w)}`) }),
  });
  res.end(text);
}

/** An OpenAPI document (JSON), cacheable by its hash as kube-apiserver serves them. */
function sendDocument(req: IncomingMessage, res: ServerResponse, document: ServedDocument): void {
  const etag = `"${document.hash}"`;
  const headers = { "Content-Type": "application/json", ETag: etag, "Cache-Control": "no-cache, private" };
  if (req.headers["if-none-match"] === etag) {
    res.writeHead(304, headers);
    return void res.end();
  }
  res.writeHead(200, { ...headers, "Content-Length": Buffer.byteLength(document.body) });
  res.end(document.body);
}

const OPENAPI_JSON_ONLY =
  "the simulated cluster serves its OpenAPI documents as JSON only (Accept: application/json), not protobuf; kubectl explain reads the v3 documents (its default output), --output plaintext-openapiv2 needs protobuf";

// No Accept, or one that takes JSON: application/json, any application type, or anything.
function acceptsJson(req: IncomingMessage): boolean {
  const accept = req.headers.accept;
  if (!accept) return true;
  return accept.split(",").some((part) => ["application/json", "*/*", "application/*"].includes(part.split(";")[0]!.trim()));
}

/** `/openapi/v2`, `/openapi/v3`, `/openapi/v3/<group path>`; undefined for other paths. */
function openApiDocument(path: string): ServedDocument | undefined {
  const documents = openApiDocuments();
  if (path === "/openapi/v2") return documents.v2;
  if (path === "/openapi/v3") return documents.index;
  if (path.startsWith("/openapi/v3/")) return documents.v3.get(path.slice("/openapi/v3/".length)) ?? undefined;
  return undefined;
}

function resolveTarget(group: string, version: string, rest: string[]): Target | undefined {
  let watchPath = false;
  if (rest[0] === "watch") {
    watchPath = true;
    rest = rest.slice(1);
  }
  // nodes/<name>/proxy/<path…>: the only cluster-scoped path longer than three segments.
  if (rest[0] === "nodes" && rest[2] === "proxy") rest = rest.slice(0, 3);
  if (rest[0] === "namespaces" && rest.length >= 3) {
    const resource = findResource(group, version, rest[2]!);
    if (resource?.namespaced) return { resource, namespace: rest[1], name: rest[3], subresource: rest[4], watchPath };
  }
  const resource = rest[0] === undefined ? undefined : findResource(group, version, rest[0]);
  if (!resource) return undefined;
  if (rest.length > 3) return undefined;
  return { resource, name: rest[1], subresource: rest[2], watchPath };
}

/** `kubectl/v1.32.4 (linux/amd64) …` → `kubectl`, the API server's default field manager. */
function managerOf(req: IncomingMessage, params: URLSearchParams): string | undefined {
  const explicit = params.get("fieldManager");
  if (explicit) return explicit;
  const agent = req.headers["user-agent"];
  return agent ? agent.split("/")[0]!.trim() || undefined : undefined;
}

function stripTypeMeta(object: KubeObject): KubeObject {
  const { apiVersion: _a, kind: _k, ...rest } = object;
  return rest as KubeObject;
}

const RBAC_RESOURCES = ["roles", "clusterroles", "rolebindings", "clusterrolebindings"].map((r) => resourceOf(r, "rbac.authorization.k8s.io"));
const ADMISSION_GROUP = "admissionregistration.k8s.io";

const VERB_OF_METHOD: Record<string, Verb> = { POST: "create", PUT: "update", PATCH: "patch" };

/** The RBAC attributes of a resource request, as kube-apiserver's RequestInfoFactory derives them. */
export function resourceAttributes(method: string, target: Target, watchParam: boolean): RequestAttributes & { kind: "resource" } {
  const { resource, name, subresource } = target;
  const verb: Verb =
    method === "GET"
      ? target.watchPath || (watchParam && !name)
        ? "watch"
        : name
          ? "get"
          : "list"
      : method === "DELETE"
        ? name
          ? "delete"
          : "deletecollection"
        : (VERB_OF_METHOD[method] ?? "get");
  // A namespace's own URL is in that namespace (`/api/v1/namespaces/x` is namespace x).
  const namespace = resource.resource === "namespaces" && resource.group === "" && name ? name : target.namespace;
  return {
    kind: "resource",
    verb,
    apiGroup: resource.group,
    apiVersion: resource.version,
    resource: resource.resource,
    ...(subresource && { subresource }),
    ...(namespace !== undefined && { namespace }),
    ...(name && { name }),
  };
}

export async function startApiServer(options: ApiServerOptions): Promise<ApiServer> {
  const { registry } = options;
  const serviceAccounts = resourceOf("serviceaccounts");
  const authenticator = new Authenticator(options.token, options.users ?? [], (namespace, name) => registry.find(serviceAccounts, namespace, name));
  const listAll = (resource: ResourceType) => registry.list(resource, undefined).items;
  const rbacObjects = () => {
    const [roles, clusterRoles, roleBindings, clusterRoleBindings] = RBAC_RESOURCES.map(listAll) as [KubeObject[], KubeObject[], KubeObject[], KubeObject[]];
    return { roles, clusterRoles, roleBindings, clusterRoleBindings };
  };
  const requireAllowed = (user: UserInfo, request: RequestAttributes) => {
    // The superuser needs no look at the RBAC objects (the hot path of benchmarks and most tests).
    if (user.groups.includes(MASTERS)) return;
    if (!authorize(user, request, rbacObjects()).allowed) throw forbidden(user, request);
  };
  const policies = () => ({
    policies: listAll(resourceOf("validatingadmissionpolicies", ADMISSION_GROUP)),
    bindings: listAll(resourceOf("validatingadmissionpolicybindings", ADMISSION_GROUP)),
  });
  const sockets = new Set<Socket>();
  const watches = new Set<ServerResponse>();
  let address = "";

  const accepts = (req: IncomingMessage, what: string) => (req.headers.accept ?? "").includes(what);

  async function handle(req: IncomingMessage, res: ServerResponse, url: URL): Promise<void> {
    const path = url.pathname.replace(/\/+$/, "") || "/";
    const params = url.searchParams;
    if (path === "/version") return send(res, 200, versionInfo);
    if (/^\/(healthz|livez|readyz)(\/.*)?$/.test(path)) {
      res.writeHead(200, { "Content-Type": "text/plain" });
      return void res.end("ok");
    }
    const user = authenticator.authenticate(req.headers.authorization);
    const segments = path.split("/").filter(Boolean).map(decodeURIComponent);
    const resourcePath = (segments[0] === "api" && segments.length >= 3) || (segments[0] === "apis" && segments.length >= 4);
    if (!resourcePath) requireAllowed(user, { kind: "nonResource", verb: (req.method ?? "GET").toLowerCase(), path });
    if (path.startsWith("/openapi/")) {
      const document = openApiDocument(path);
      if (!document) throw errors.pathNotFound();
      if (!acceptsJson(req)) throw new ApiError(406, "NotAcceptable", OPENAPI_JSON_ONLY);
      return sendDocument(req, res, document);
    }
    if (path === "/api") return send(res, 200, coreVersions(address));
    if (path === "/apis") {
      const list = groupList();
      return send(res, 200, { ...list, groups: [...list.groups, metricsApiGroup()] });
    }
    let group: string;
    let version: string;
    let rest: string[];
    if (segments[0] === "api" && segments.length >= 2) [group, version, rest] = ["", segments[1]!, segments.slice(2)];
    else if (segments[0] === "apis" && segments.length >= 2) {
      if (segments[1] === METRICS_GROUP) {
        if (segments.length === 2) return send(res, 200, { kind: "APIGroup", apiVersion: "v1", ...metricsApiGroup() });
        if (segments.length === 3 && segments[2] === "v1beta1") return send(res, 200, metricsResourceList());
        throw unsupportedError(NO_METRICS);
      }
      if (segments.length === 2) {
        const document = groupDocument(segments[1]!);
        if (!document) throw errors.pathNotFound();
        return send(res, 200, document);
      }
      [group, version, rest] = [segments[1]!, segments[2]!, segments.slice(3)];
    } else throw errors.pathNotFound();
    if (rest.length === 0) {
      const document = resourceList(group, version);
      if (!document) throw errors.pathNotFound();
      return send(res, 200, document);
    }
    const target = resolveTarget(group, version, rest);
    if (!target) throw errors.pathNotFound();
    const method = req.method ?? "GET";
    const attributes = resourceAttributes(method, target, boolParam(params, "watch"));
    requireAllowed(user, attributes);
    // Server-side apply of an object that does not exist yet creates it: that takes `create` too.
    const applyType = PATCH_TYPES[(req.headers["content-type"] ?? "").split(";")[0]!.trim().toLowerCase()] === "apply";
    if (method === "PATCH" && applyType && target.name && !registry.find(target.resource, target.namespace, target.name)) {
      requireAllowed(user, { ...attributes, verb: "create" });
    }
    return handleResource(req, res, params, target, user);
  }

  async function handleResource(req: IncomingMessage, res: ServerResponse, params: URLSearchParams, target: Target, user: UserInfo): Promise<void> {
    const { resource, namespace, name, subresource } = target;
    if (subresource && !resource.subresources.includes(subresource)) throw unsupportedSubresource(resource.resource, subresource) ?? errors.pathNotFound();
    const method = req.method ?? "GET";
    const dryRun = params.get("dryRun") === "All";
    const admissionWarnings: string[] = [];
    const admit = (operation: Operation, inCollection = false) => (object: KubeObject | undefined, old: KubeObject | undefined) => {
      const subject = object ?? old!;
      const objectNamespace = resource.namespaced ? (subject.metadata.namespace ?? namespace) : undefined;
      // kube-apiserver admits each object of a deletecollection without its name.
      const name = inCollection ? "" : (subject.metadata.name ?? "");
      const attributes = admissionAttributes({ operation, resource, subresource, namespace: objectNamespace, name, user, dryRun });
      const namespaceObject = objectNamespace ? registry.find(resourceOf("namespaces"), undefined, objectNamespace) : undefined;
      const result = validateAdmission(attributes, { object, oldObject: old, namespaceObject }, policies());
      admissionWarnings.push(...result.warnings);
      if (result.error) throw result.error;
    };
    const write: WriteOptions = {
      fieldManager: managerOf(req, params),
      dryRun,
      ...(subresource === "status" && { subresource: "status" as const }),
      admit: (object, old) => admit(old ? "UPDATE" : "CREATE")(object, old),
    };
    const withWarnings = (warnings: readonly string[]) => [...warnings, ...admissionWarnings];
    const contentType = (req.headers["content-type"] ?? "application/json").split(";")[0]!.trim().toLowerCase();
    const validation = method === "GET" || method === "DELETE" ? "Ignore" : fieldValidationOf(params);
    checkBooleanParams(params);

    if (!name) {
      if (resource.namespaced && namespace === undefined && method !== "GET") throw errors.methodNotAllowed();
      if (method === "GET") {
        if (target.watchPath || boolParam(params, "watch")) return watch(req, res, params, target);
        return list(req, res, params, target);
      }
      if (method === "POST") {
        const body = await readObject(req, contentType);
        const warnings = validateFields(resource, body, validation);
        const created = await registry.create(resource, namespace, body, write);
        return send(res, 201, created, withWarnings(warnings));
      }
      if (method === "DELETE") {
        const selection = { labelSelector: params.get("labelSelector") ?? undefined, fieldSelector: params.get("fieldSelector") ?? undefined };
        const deleting = await deleteOptions(req, params);
        // Each object is admitted as its own DELETE, all before any goes: one refusal deletes nothing.
        for (const object of registry.list(resource, namespace, selection).items) admit("DELETE", true)(undefined, object);
        const deleted = await registry.deleteCollection(resource, namespace, selection, deleting);
        return send(res, 200, { apiVersion: groupVersion(resource), kind: `${resource.kind}List`, metadata: {}, items: deleted.map(stripTypeMeta) }, admissionWarnings);
      }
      throw errors.methodNotAllowed();
    }

    if (target.watchPath) return watch(req, res, params, { ...target, name: undefined }, name);
    if (subresource === "log") return podLog(res, params, target);
    if (subresource === "token") {
      if (method !== "POST") throw errors.methodNotAllowed();
      const account = registry.get(resource, namespace, name);
      return send(res, 201, authenticator.issue(account, parseBody(await readBody(req), contentType)));
    }
    if (subresource === "scale") return scale(req, res, params, target, write, contentType);
    if (subresource === "binding" || subresource === "eviction") {
      if (method !== "POST") throw errors.methodNotAllowed();
      const body = parseBody(await readBody(req), contentType) as Record<string, any>;
      if (subresource === "binding") {
        if (!body?.target?.name) throw errors.badRequest("binding target is required");
        await registry.bind(namespace!, name, body.target.name, write.fieldManager);
      } else await registry.delete(resource, namespace, name, { ...(body?.deleteOptions ?? {}) });
      return send(res, 201, { kind: "Status", apiVersion: "v1", metadata: {}, status: "Success", code: 201 });
    }

    switch (method) {
      case "GET": {
        const object = registry.get(resource, namespace, name);
        if (accepts(req, "as=Table")) return send(res, 200, toTable(resource, [object], { resourceVersion: object.metadata.resourceVersion }, params.get("includeObject") ?? "Metadata"));
        if (accepts(req, "as=PartialObjectMetadata")) return send(res, 200, { kind: "PartialObjectMetadata", apiVersion: "meta.k8s.io/v1", metadata: object.metadata });
        return send(res, 200, object);
      }
      case "PUT": {
        const body = await readObject(req, contentType);
        const warnings = validateFields(resource, body, validation);
        const updated = await registry.update(resource, namespace, name, body, write);
        return send(res, 200, updated, withWarnings(warnings));
      }
      case "PATCH": {
        const type = PATCH_TYPES[contentType];
        if (!type) throw errors.unsupportedMediaType(contentType);
        const force = boolParam(params, "force");
        if (force && type !== "apply") throw errors.badRequest("force: Forbidden: may not be specified for non-apply patch");
        const body = parseBody(await readBody(req), type === "apply" ? "yaml" : "json");
        const warnings = type === "json" ? [] : validateFields(resource, body, validation);
        const existed = registry.find(resource, namespace, name) !== undefined;
        const patched = await registry.patch(resource, namespace, name, type, body, { ...write, force });
        return send(res, existed ? 200 : 201, patched, withWarnings(warnings));
      }
      case "DELETE": {
        const deleting = await deleteOptions(req, params);
        admit("DELETE")(undefined, registry.get(resource, namespace, name));
        const deleted = await registry.delete(resource, namespace, name, deleting);
        return send(res, 200, deleted, admissionWarnings);
      }
      default:
        throw errors.methodNotAllowed();
    }
  }

  async function deleteOptions(req: IncomingMessage, params: URLSearchParams): Promise<DeleteOptions> {
    const raw = await readBody(req);
    const body = (raw.toString("utf8").trim() === "" ? {} : parseBody(raw, req.headers["content-type"] ?? "json")) as Record<string, any>;
    const orphan = params.has("orphanDependents") ? boolParam(params, "orphanDependents") : body.orphanDependents === true;
    return {
      gracePeriodSeconds: intParam(params, "gracePeriodSeconds") ?? body.gracePeriodSeconds,
      preconditions: body.preconditions,
      propagationPolicy: (params.get("propagationPolicy") ?? body.propagationPolicy ?? (orphan ? "Orphan" : undefined)) as DeleteOptions["propagationPolicy"],
      dryRun: params.get("dryRun") === "All" || (Array.isArray(body.dryRun) && body.dryRun.includes("All")),
    };
  }

  function list(req: IncomingMessage, res: ServerResponse, params: URLSearchParams, target: Target): void {
    const { resource, namespace } = target;
    const result = registry.list(resource, namespace, {
      labelSelector: params.get("labelSelector") ?? undefined,
      fieldSelector: params.get("fieldSelector") ?? undefined,
      limit: intParam(params, "limit"),
      continue: params.get("continue") ?? undefined,
    });
    const metadata = {
      resourceVersion: result.resourceVersion,
      ...(result.continue && { continue: result.continue, remainingItemCount: result.remainingItemCount }),
    };
    if (accepts(req, "as=Table")) return send(res, 200, toTable(resource, result.items, metadata, params.get("includeObject") ?? "Metadata"));
    if (accepts(req, "as=PartialObjectMetadataList")) {
      return send(res, 200, {
        kind: "PartialObjectMetadataList",
        apiVersion: "meta.k8s.io/v1",
        metadata,
        items: result.items.map((o) => ({ kind: "PartialObjectMetadata", apiVersion: "meta.k8s.io/v1", metadata: o.metadata })),
      });
    }
    send(res, 200, { apiVersion: groupVersion(resource), kind: `${resource.kind}List`, metadata, items: result.items.map(stripTypeMeta) });
  }

  function watch(req: IncomingMessage, res: ServerResponse, params: URLSearchParams, target: Target, singleName?: string): void {
    const { resource, namespace } = target;
    const table = accepts(req, "as=Table");
    const fieldSelector = [params.get("fieldSelector"), singleName && `metadata.name=${singleName}`].filter(Boolean).join(",");
    const open = () => {
      if (res.headersSent) return;
      res.writeHead(200, { "Content-Type": "application/json", "Transfer-Encoding": "chunked", "Cache-Control": "no-cache, private" });
      // Without this, a watch on an empty collection sends nothing and client-node's Watch never resolves.
      res.flushHeaders();
      watches.add(res);
    };
    const emit = (type: string, object: unknown) => {
      open();
      if (!res.writableEnded) res.write(JSON.stringify({ type, object }) + "\n");
    };
    let stop: (() => void) | undefined;
    const end = () => {
      stop?.();
      watches.delete(res);
      if (!res.writableEnded) res.end();
    };
    try {
      stop = registry.watch(
        resource,
        namespace,
        { resourceVersion: params.get("resourceVersion") ?? undefined, labelSelector: params.get("labelSelector") ?? undefined, fieldSelector },
        (type, object) => emit(type, table ? toTable(resource, [object], { resourceVersion: object.metadata.resourceVersion }) : object),
      );
    } catch (error) {
      if (error instanceof ApiError && error.code === 410) {
        emit("ERROR", error.toStatus());
        return end();
      }
      throw error;
    }
    open();
    const timeout = intParam(params, "timeoutSeconds");
    if (timeout && timeout > 0) setTimeout(end, timeout * 1000).unref();
    req.on("close", end);
    res.on("close", end);
  }

  function podLog(res: ServerResponse, params: URLSearchParams, target: Target): void {
    if (!options.logs) throw errors.pathNotFound();
    const pod = registry.get(target.resource, target.namespace, target.name!);
    const request: PodLogRequest = {
      container: params.get("container") ?? undefined,
      previous: boolParam(params, "previous"),
      tailLines: intParam(params, "tailLines"),
      limitBytes: intParam(params, "limitBytes"),
      sinceSeconds: intParam(params, "sinceSeconds"),
      timestamps: boolParam(params, "timestamps"),
      follow: boolParam(params, "follow"),
    };
    const { text, follow } = options.logs.read(pod, request);
    if (!request.follow || !follow) {
      res.writeHead(200, { "Content-Type": "text/plain", "Content-Length": Buffer.byteLength(text) });
      return void res.end(text);
    }
    res.writeHead(200, { "Content-Type": "text/plain", "Transfer-Encoding": "chunked" });
    res.flushHeaders();
    watches.add(res);
    res.write(text);
    const stop = follow(
      (more) => void (!res.writableEnded && res.write(more)),
      () => {
        watches.delete(res);
        if (!res.writableEnded) res.end();
      },
    );
    res.on("close", () => {
      stop();
      watches.delete(res);
    });
  }

  function scaleOf(deployment: KubeObject) {
    const spec = deployment.spec as Record<string, any>;
    const status = (deployment.status ?? {}) as Record<string, any>;
    const { name, namespace, uid, resourceVersion, creationTimestamp } = deployment.metadata;
    return {
      kind: "Scale",
      apiVersion: "autoscaling/v1",
      metadata: { name, namespace, uid, resourceVersion, creationTimestamp },
      spec: { replicas: spec.replicas ?? 0 },
      status: { replicas: status.replicas ?? 0, selector: formatLabelSelector(fromSelectorObject(spec.selector)) },
    };
  }

  async function scale(req: IncomingMessage, res: ServerResponse, params: URLSearchParams, target: Target, write: WriteOptions, contentType: string): Promise<void> {
    const { resource, namespace, name } = target;
    const deployment = registry.get(resource, namespace, name!);
    const method = req.method ?? "GET";
    if (method === "GET") return send(res, 200, scaleOf(deployment));
    if (method !== "PUT" && method !== "PATCH") throw errors.methodNotAllowed();
    const body = parseBody(await readBody(req), contentType) as Record<string, any>;
    let wanted: Record<string, any>;
    if (method === "PUT") wanted = body;
    else {
      const type = PATCH_TYPES[contentType];
      if (!type || type === "apply") throw errors.unsupportedMediaType(contentType);
      const current = scaleOf(deployment) as never;
      wanted = (type === "merge" ? mergePatch(current, body as never) : type === "json" ? jsonPatch(current, body) : strategicMergePatch(current, body as never)) as Record<string, any>;
    }
    const replicas = wanted?.spec?.replicas;
    if (!Number.isInteger(replicas) || replicas < 0) throw errors.invalid({ resource: "deployments", group: "autoscaling", kind: "Scale" }, name!, [{ field: "spec.replicas", message: `Invalid value: ${JSON.stringify(replicas)}: must be greater than or equal to 0`, reason: "FieldValueInvalid" }]);
    const precondition = wanted?.metadata?.resourceVersion;
    if (precondition && precondition !== deployment.metadata.resourceVersion) throw errors.stale(resource, name!);
    const updated = await registry.patch(resource, namespace, name!, "merge", { spec: { replicas } }, { ...write, subresource: undefined });
    send(res, 200, scaleOf(updated));
  }

  const onRequest = (req: IncomingMessage, res: ServerResponse) => {
    const started = performance.now();
    const url = new URL(req.url ?? "/", "http://localhost");
    options.onRequest?.({ method: req.method ?? "GET", path: url.pathname, search: url.search, at: started });
    handle(req, res, url)
      .catch((error: unknown) => {
        const apiError =
          error instanceof ApiError ? error : new ApiError(500, "InternalError", `Internal error occurred: ${(error as Error).message}`);
        if (!(error instanceof ApiError)) process.stderr.write(`berth-sim api-server: ${(error as Error).stack ?? String(error)}\n`);
        if (res.headersSent) return void res.end();
        send(res, apiError.code, apiError.toStatus());
      })
      .finally(() => options.log?.(`${req.method} ${url.pathname}${url.search} ${res.statusCode} ${Math.round(performance.now() - started)}ms`));
  };
  const server = options.tls ? createTlsServer({ key: options.tls.key, cert: options.tls.cert }, onRequest) : createServer(onRequest);
  server.on("connection", (socket) => {
    sockets.add(socket);
    socket.once("close", () => sockets.delete(socket));
  });
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    // The kernel's largest accept queue (somaxconn), as kube-apiserver's Go listener has: with
    // Node's default of 511, a client opening thousands of connections at once got resets.
    server.listen({ port: options.port ?? 0, host: options.host ?? "127.0.0.1", backlog: 65_535 }, () => resolve());
  });
  const bound = server.address() as AddressInfo;
  address = `${bound.address}:${bound.port}`;
  return {
    url: `${options.tls ? "https" : "http"}://${address}`,
    close: () =>
      new Promise<void>((resolve) => {
        for (const res of watches) res.end();
        watches.clear();
        server.close(() => resolve());
        for (const socket of sockets) socket.destroy();
      }),
  };
}
