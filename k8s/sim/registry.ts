// The API verbs over the store, with the real API server's semantics: create (generateName,
// defaults, validation, uid), update (resourceVersion preconditions → 409, status subresource
// written apart from spec, no-op writes commit nothing), the four patch types (server-side apply
// records field ownership in managedFields), graceful delete (pods bound to a node get a
// deletionTimestamp and a grace period; the kubelet removes them once their processes are gone),
// delete preconditions on uid and resourceVersion, finalizers, namespace termination, and
// background garbage collection by ownerReferences. The HTTP layer and the in-process
// controllers (scheduler, kubelet, endpoints, Deployments) all write through here.
import { randomUUID } from "node:crypto";
import {
  ApiError,
  errors,
  fieldError,
  thaw,
  timestamp,
  randomSuffix,
  type KubeObject,
  type ObjectMeta,
  type OwnerReference,
} from "./objects.ts";
import {
  ApplyConflictError,
  deepEqual,
  describePath,
  isObject,
  jsonPatch,
  mergePatch,
  PatchError,
  recordUpdate,
  serverSideApply,
  strategicMergePatch,
  type Json,
  type JsonObject,
  type ManagedFieldsEntry,
} from "./patch.ts";
import { groupVersion, resourceOf, RESOURCES, type ResourceType } from "./resources.ts";
import { matchesFields, matchesLabels, parseFieldSelector, parseLabelSelector, SelectorError } from "./selectors.ts";
import type { Change, ChangeType, Store } from "./store.ts";
import { checkMetadata, strategyFor } from "./strategies.ts";

export type PatchType = "merge" | "json" | "strategic" | "apply";

export interface WriteOptions {
  /** Who writes (managedFields); defaults to the client's user agent, as the API server does. */
  fieldManager?: string;
  dryRun?: boolean;
  subresource?: "status";
  /** Admission after defaults and validation (ValidatingAdmissionPolicies): throws to refuse the write; `old` is absent on create. */
  admit?: (object: KubeObject, old: KubeObject | undefined) => void;
}

export interface PatchOptions extends WriteOptions {
  force?: boolean;
}

export interface DeleteOptions {
  gracePeriodSeconds?: number;
  preconditions?: { uid?: string; resourceVersion?: string };
  propagationPolicy?: "Orphan" | "Background" | "Foreground";
  dryRun?: boolean;
}

export interface ListOptions {
  labelSelector?: string;
  fieldSelector?: string;
  limit?: number;
  continue?: string;
}

export interface ListResult {
  items: KubeObject[];
  resourceVersion: string;
  continue?: string;
  remainingItemCount?: number;
}

export interface WatchOptions {
  resourceVersion?: string;
  labelSelector?: string;
  fieldSelector?: string;
}

export type WatchListener = (type: ChangeType, object: KubeObject) => void;

export interface RegistryHooks {
  /** Claims a ClusterIP for a new Service. */
  /** `key` names the Service ("services/<namespace>/<name>"), so a restarted cluster can give it its address again. */
  allocateClusterIP?(key: string): Promise<string>;
  releaseClusterIP?(ip: string): void;
}

/** Metadata only the server sets; clients' values are ignored (and not tracked as owned fields). */
const SERVER_META = [
  "name",
  "generateName",
  "namespace",
  "uid",
  "resourceVersion",
  "generation",
  "creationTimestamp",
  "deletionTimestamp",
  "deletionGracePeriodSeconds",
  "managedFields",
  "selfLink",
] as const;

function pick(meta: ObjectMeta, keys: readonly string[]): ObjectMeta {
  const out: Record<string, unknown> = {};
  for (const key of keys) if ((meta as Record<string, unknown>)[key] !== undefined) out[key] = (meta as Record<string, unknown>)[key];
  return out as ObjectMeta;
}

function omit(meta: ObjectMeta, keys: readonly string[]): Record<string, unknown> {
  const out: Record<string, unknown> = { ...meta };
  for (const key of keys) delete out[key];
  return out;
}

/** The part of an object whose fields have owners: no server metadata; status only through /status. */
function projection(resource: ResourceType, object: KubeObject, subresource?: string): JsonObject {
  if (subresource === "status") return object.status !== undefined ? ({ status: object.status } as JsonObject) : {};
  const { apiVersion: _v, kind: _k, metadata, status, ...rest } = object;
  const out = { ...rest } as JsonObject;
  if (!resource.hasStatus && status !== undefined) out.status = status as Json;
  const meta = omit(metadata, SERVER_META);
  if (Object.keys(meta).length > 0) out.metadata = meta as JsonObject;
  return out;
}

function fromProjection(resource: ResourceType, base: KubeObject, part: JsonObject, subresource?: string): KubeObject {
  if (subresource === "status") return { ...base, status: part.status };
  const { metadata, ...rest } = part;
  const out: KubeObject = {
    apiVersion: base.apiVersion,
    kind: base.kind,
    metadata: { ...pick(base.metadata, SERVER_META), ...((metadata as ObjectMeta | undefined) ?? {}) },
    ...rest,
  };
  if (resource.hasStatus && base.status !== undefined) out.status = base.status;
  return out;
}

/** Object content that counts toward `metadata.generation` (everything but metadata and status). */
function generationContent(object: KubeObject): unknown {
  const { metadata: _m, status: _s, apiVersion: _a, kind: _k, ...rest } = object;
  return rest;
}

function withoutTimes(object: KubeObject): unknown {
  return {
    ...object,
    metadata: { ...object.metadata, resourceVersion: undefined, managedFields: object.metadata.managedFields?.map((e) => ({ ...e, time: undefined })) },
  };
}

function parseSelectors(options: { labelSelector?: string; fieldSelector?: string }) {
  try {
    const labels = parseLabelSelector(options.labelSelector ?? "");
    const fields = parseFieldSelector(options.fieldSelector ?? "");
    return (object: KubeObject) => matchesLabels(labels, object.metadata.labels) && matchesFields(fields, object);
  } catch (error) {
    if (error instanceof SelectorError) throw errors.badRequest(error.message);
    throw error;
  }
}

export class Registry {
  readonly #orphaning = new Set<string>();

  constructor(
    readonly store: Store,
    private readonly hooks: RegistryHooks = {},
  ) {}

  // ---------------------------------------------------------------------------------------------
  // Reads

  get(resource: ResourceType, namespace: string | undefined, name: string): KubeObject {
    const object = this.store.get(resource, namespace, name);
    if (!object) throw errors.notFound(resource, name);
    return object;
  }

  find(resource: ResourceType, namespace: string | undefined, name: string): KubeObject | undefined {
    return this.store.get(resource, namespace, name);
  }

  list(resource: ResourceType, namespace: string | undefined, options: ListOptions = {}): ListResult {
    const matches = parseSelectors(options);
    let items = this.store.list(resource, resource.namespaced ? namespace : undefined).filter(matches);
    const resourceVersion = String(this.store.resourceVersion);
    if (options.continue) {
      let after: string;
      try {
        after = (JSON.parse(Buffer.from(options.continue, "base64url").toString("utf8")) as { after: string }).after;
      } catch {
        throw errors.badRequest("continue key is not valid: illegal base64 data");
      }
      items = items.filter((o) => `${o.metadata.namespace ?? ""}/${o.metadata.name}` > after);
    }
    if (options.limit && options.limit > 0 && items.length > options.limit) {
      const page = items.slice(0, options.limit);
      const last = page[page.length - 1]!;
      const token = Buffer.from(JSON.stringify({ after: `${last.metadata.namespace ?? ""}/${last.metadata.name}` })).toString("base64url");
      return { items: page, resourceVersion, continue: token, remainingItemCount: items.length - page.length };
    }
    return { items, resourceVersion };
  }

  /**
   * Streams changes of one type (optionally one namespace, selectors) after `resourceVersion`;
   * without one (or "0"), first every current object as ADDED. An object that stops matching a
   * selector is reported DELETED, one that starts matching ADDED, as the watch cache does.
   * Throws 410 Expired when the history no longer reaches back to `resourceVersion`.
   */
  watch(resource: ResourceType, namespace: string | undefined, options: WatchOptions, listener: WatchListener): () => void {
    const selected = parseSelectors(options);
    const inScope = (object: KubeObject) => !resource.namespaced || namespace === undefined || object.metadata.namespace === namespace;
    const matches = (object: KubeObject | undefined) => object !== undefined && inScope(object) && selected(object);
    const raw = options.resourceVersion ?? "";
    let backlog: Change[] | undefined;
    let initial: KubeObject[] = [];
    if (raw === "" || raw === "0") initial = this.store.list(resource, resource.namespaced ? namespace : undefined).filter(matches);
    else {
      const from = Number(raw);
      if (!Number.isInteger(from) || from < 0) throw errors.badRequest(`resourceVersion: Invalid value: "${raw}": must be a non-negative integer`);
      backlog = this.store.changesSince(from);
      if (!backlog) throw errors.expired(`too old resource version: ${from} (${this.store.compactedResourceVersion + 1})`);
    }
    const deliver = (change: Change) => {
      if (change.resource !== resource) return;
      const was = change.type !== "ADDED" && matches(change.previous);
      const is = change.type !== "DELETED" && matches(change.object);
      if (was && is) listener("MODIFIED", change.object);
      else if (is) listener("ADDED", change.object);
      else if (was) listener("DELETED", change.object);
    };
    for (const object of initial) listener("ADDED", object);
    for (const change of backlog ?? []) deliver(change);
    return this.store.subscribe(deliver);
  }

  // ---------------------------------------------------------------------------------------------
  // Writes

  #checkBody(resource: ResourceType, namespace: string | undefined, body: unknown): KubeObject {
    if (!isObject(body)) throw errors.badRequest("the body of the request must be a JSON object");
    const object = thaw(body) as unknown as KubeObject;
    const expected = groupVersion(resource);
    if (object.apiVersion !== undefined && object.apiVersion !== expected) {
      throw errors.badRequest(`the API version in the data (${String(object.apiVersion)}) does not match the expected API version (${expected})`);
    }
    if (object.kind !== undefined && object.kind !== resource.kind) {
      throw errors.badRequest(`the kind in the data (${String(object.kind)}) does not match the expected kind (${resource.kind})`);
    }
    object.apiVersion = expected;
    object.kind = resource.kind;
    if (!isObject(object.metadata)) object.metadata = {};
    if (resource.namespaced) {
      if (object.metadata.namespace && object.metadata.namespace !== namespace) {
        throw errors.badRequest("the namespace of the provided object does not match the namespace sent on the request");
      }
      object.metadata.namespace = namespace;
    } else delete object.metadata.namespace;
    return object;
  }

  #requireNamespace(namespace: string | undefined): void {
    const namespaces = resourceOf("namespaces");
    if (!namespace) throw errors.badRequest("a namespace is required for namespaced resources");
    const ns = this.store.get(namespaces, undefined, namespace);
    if (!ns) throw errors.notFound(namespaces, namespace);
    if (ns.metadata.deletionTimestamp) {
      throw new ApiError(403, "Forbidden", `unable to create new content in namespace ${namespace} because it is being terminated`, {
        name: namespace,
        kind: "namespaces",
        causes: [{ reason: "NamespaceTerminating", message: `namespace ${namespace} is being terminated`, field: "metadata.namespace" }],
      });
    }
  }

  /** Defaults, validation and (for an update) what may not change; throws 422 with every problem. */
  #admit(resource: ResourceType, object: KubeObject, old?: KubeObject): void {
    const strategy = strategyFor(resource);
    strategy.defaults?.(object as Record<string, any>);
    const causes = [...checkMetadata(resource, object), ...(strategy.validate?.(object as Record<string, any>) ?? [])];
    if (old && causes.length === 0) causes.push(...(strategy.update?.(object as Record<string, any>, old as Record<string, any>) ?? []));
    if (causes.length > 0) throw errors.invalid(resource, object.metadata.name ?? "", causes);
  }

  async create(resource: ResourceType, namespace: string | undefined, body: unknown, options: WriteOptions = {}): Promise<KubeObject> {
    return this.#create(resource, namespace, this.#checkBody(resource, namespace, body), options);
  }

  async #create(resource: ResourceType, namespace: string | undefined, object: KubeObject, options: WriteOptions, managedFields?: ManagedFieldsEntry[]): Promise<KubeObject> {
    if (resource.namespaced) this.#requireNamespace(namespace);
    if (object.metadata.resourceVersion) throw errors.badRequest("resourceVersion should not be set on objects to be created");
    if (!object.metadata.name && object.metadata.generateName) {
      do object.metadata.name = `${object.metadata.generateName}${randomSuffix()}`;
      while (this.store.get(resource, namespace, object.metadata.name));
    }
    const name = object.metadata.name;
    if (!name) throw errors.invalid(resource, "", [fieldError.required("metadata.name", "name or generateName is required")]);
    if (this.store.get(resource, namespace, name)) throw errors.alreadyExists(resource, name);

    const strategy = strategyFor(resource);
    const now = timestamp();
    object.metadata = { ...omit(object.metadata, ["uid", "creationTimestamp", "deletionTimestamp", "deletionGracePeriodSeconds", "generation", "managedFields", "selfLink"]) } as ObjectMeta;
    object.metadata.uid = randomUUID();
    object.metadata.creationTimestamp = now;
    object.metadata.generation = 1;
    this.#admit(resource, object);
    options.admit?.(object, undefined);
    if (strategy.initialStatus) object.status = strategy.initialStatus(object as Record<string, any>);
    object.metadata.managedFields =
      managedFields ?? recordUpdate(undefined, projection(resource, object), [], { manager: options.fieldManager ?? "unknown", apiVersion: object.apiVersion!, time: now });
    if (options.dryRun) return object;

    let allocated: string | undefined;
    if (resource.resource === "services" && this.hooks.allocateClusterIP) {
      const spec = object.spec as Record<string, any>;
      if (spec.clusterIP !== "None" && spec.type !== "ExternalName") {
        if (spec.clusterIP) throw errors.invalid(resource, name, [fieldError.invalid("spec.clusterIP", spec.clusterIP, "the simulated cluster allocates ClusterIPs itself; give none or \"None\"")]);
        allocated = await this.hooks.allocateClusterIP(`services/${namespace}/${name}`);
        spec.clusterIP = allocated;
        spec.clusterIPs = [allocated];
      } else if (spec.clusterIP === "None") spec.clusterIPs = ["None"];
      spec.ipFamilies ??= ["IPv4"];
      spec.ipFamilyPolicy ??= "SingleStack";
    }
    // The allocation awaited: someone may have taken the name meanwhile.
    if (this.store.get(resource, namespace, name) || (resource.namespaced && !this.store.get(resourceOf("namespaces"), undefined, namespace!))) {
      if (allocated) this.hooks.releaseClusterIP?.(allocated);
      throw errors.alreadyExists(resource, name);
    }
    return this.store.put(resource, object);
  }

  async update(resource: ResourceType, namespace: string | undefined, name: string, body: unknown, options: WriteOptions = {}): Promise<KubeObject> {
    const old = this.get(resource, namespace, name);
    const incoming = this.#checkBody(resource, namespace, body);
    if (incoming.metadata.name !== undefined && incoming.metadata.name !== name) {
      throw errors.badRequest(`the name of the object (${incoming.metadata.name}) does not match the name on the URL (${name})`);
    }
    if (incoming.metadata.resourceVersion && incoming.metadata.resourceVersion !== old.metadata.resourceVersion) throw errors.stale(resource, name);
    const next =
      options.subresource === "status"
        ? { ...thaw(old), status: incoming.status }
        : fromProjection(resource, thaw(old), projection(resource, incoming));
    return this.#commitUpdate(resource, old, next, options);
  }

  async patch(resource: ResourceType, namespace: string | undefined, name: string, type: PatchType, body: unknown, options: PatchOptions = {}): Promise<KubeObject> {
    if (type === "apply") return this.#apply(resource, namespace, name, body, options);
    const old = this.get(resource, namespace, name);
    let patched: Json;
    try {
      const current = thaw(old) as unknown as Json;
      patched = type === "merge" ? mergePatch(current, body as Json) : type === "json" ? jsonPatch(current, body) : strategicMergePatch(current, body as Json);
    } catch (error) {
      if (error instanceof PatchError) throw new ApiError(error.status, error.status === 400 ? "BadRequest" : "Invalid", error.message);
      throw error;
    }
    if (!isObject(patched)) throw errors.badRequest("the patch must produce an object");
    const result = patched as unknown as KubeObject;
    if (!isObject(result.metadata)) result.metadata = {};
    if (result.metadata.name !== name) throw errors.badRequest(`the name of the object (${String(result.metadata.name)}) does not match the name on the URL (${name})`);
    // A patch that carries a resourceVersion makes it a precondition.
    if (result.metadata.resourceVersion !== undefined && result.metadata.resourceVersion !== old.metadata.resourceVersion) throw errors.stale(resource, name);
    const incoming = this.#checkBody(resource, namespace, result);
    const next =
      options.subresource === "status" ? { ...thaw(old), status: incoming.status } : fromProjection(resource, thaw(old), projection(resource, incoming));
    return this.#commitUpdate(resource, old, next, options);
  }

  async #apply(resource: ResourceType, namespace: string | undefined, name: string, body: unknown, options: PatchOptions): Promise<KubeObject> {
    if (!options.fieldManager) {
      throw new ApiError(422, "Invalid", 'PatchOptions.meta.k8s.io "" is invalid: fieldManager: Required value: is required for apply patch', {
        kind: "PatchOptions",
        group: "meta.k8s.io",
        causes: [fieldError.required("fieldManager", "is required for apply patch")],
      });
    }
    const applied = this.#checkBody(resource, namespace, body);
    if (applied.metadata.name !== name) throw errors.badRequest(`the name of the object (${String(applied.metadata.name)}) does not match the name on the URL (${name})`);
    if (applied.metadata.managedFields !== undefined) {
      throw errors.badRequest("metadata.managedFields must be nil");
    }
    const time = timestamp();
    const ownership = { manager: options.fieldManager, apiVersion: groupVersion(resource), time, force: options.force === true, ...(options.subresource && { subresource: options.subresource }) };
    const existing = this.store.get(resource, namespace, name);
    try {
      if (!existing) {
        if (options.subresource) throw errors.notFound(resource, name);
        const { object: part, managedFields } = serverSideApply(undefined, projection(resource, applied), [], ownership);
        const base: KubeObject = { apiVersion: applied.apiVersion, kind: applied.kind, metadata: { name, ...(resource.namespaced && { namespace }) } };
        return await this.#create(resource, namespace, fromProjection(resource, base, part), options, managedFields);
      }
      if (applied.metadata.resourceVersion && applied.metadata.resourceVersion !== existing.metadata.resourceVersion) throw errors.stale(resource, name);
      const { object: part, managedFields } = serverSideApply(
        projection(resource, existing, options.subresource),
        projection(resource, applied, options.subresource),
        existing.metadata.managedFields ?? [],
        ownership,
      );
      const next = fromProjection(resource, thaw(existing), part, options.subresource);
      next.metadata.managedFields = managedFields;
      return await this.#commit(resource, existing, next, options);
    } catch (error) {
      if (error instanceof ApplyConflictError) {
        throw new ApiError(409, "Conflict", error.message, {
          name,
          ...(resource.group && { group: resource.group }),
          kind: resource.resource,
          causes: error.conflicts.map((c) => ({ reason: "FieldManagerConflict", message: `conflict with "${c.manager}"`, field: describePath(c.path) })),
        });
      }
      throw error;
    }
  }

  /** A non-apply write: the writer takes the fields it changed. */
  async #commitUpdate(resource: ResourceType, old: KubeObject, next: KubeObject, options: WriteOptions): Promise<KubeObject> {
    next.metadata.managedFields = recordUpdate(projection(resource, old, options.subresource), projection(resource, next, options.subresource), old.metadata.managedFields ?? [], {
      manager: options.fieldManager ?? "unknown",
      apiVersion: groupVersion(resource),
      time: timestamp(),
      ...(options.subresource && { subresource: options.subresource }),
    });
    return this.#commit(resource, old, next, options);
  }

  async #commit(resource: ResourceType, old: KubeObject, next: KubeObject, options: WriteOptions): Promise<KubeObject> {
    this.#admit(resource, next, old);
    options.admit?.(next, old);
    next.metadata.generation = (old.metadata.generation ?? 1) + (deepEqual(generationContent(next), generationContent(old)) ? 0 : 1);
    next.metadata.resourceVersion = old.metadata.resourceVersion;
    // Nothing changed: no new resourceVersion, no watch event.
    if (deepEqual(withoutTimes(next), withoutTimes(old))) return old;
    if (options.dryRun) return next;
    const finalizing = next.metadata.deletionTimestamp && (next.metadata.finalizers ?? []).length === 0 && resource.resource !== "pods" && resource.resource !== "namespaces";
    if (finalizing) return this.removeNow(resource, next.metadata.namespace, next.metadata.name!) ?? next;
    return this.store.put(resource, next);
  }

  /**
   * A write by an in-process controller of the status it computed (no resourceVersion check:
   * it read the object in the same tick). Returns the stored object, unchanged if nothing differs.
   */
  async writeStatus(resource: ResourceType, namespace: string | undefined, name: string, status: unknown, manager: string): Promise<KubeObject | undefined> {
    const old = this.store.get(resource, namespace, name);
    if (!old) return undefined;
    if (deepEqual(old.status, status)) return old;
    return this.#commitUpdate(resource, old, { ...thaw(old), status: thaw(status) }, { fieldManager: manager, subresource: "status" });
  }

  /** Creates or replaces an object as a controller does (Endpoints, EndpointSlices, Events). */
  async upsert(resource: ResourceType, object: KubeObject, manager: string): Promise<KubeObject> {
    const existing = this.store.get(resource, object.metadata.namespace, object.metadata.name!);
    if (!existing) return this.create(resource, object.metadata.namespace, object, { fieldManager: manager });
    return this.update(resource, object.metadata.namespace, object.metadata.name!, { ...object, metadata: { ...object.metadata, resourceVersion: undefined } }, { fieldManager: manager });
  }

  /** The scheduler's binding: sets spec.nodeName (which no update may) and PodScheduled=True. */
  async bind(namespace: string, name: string, nodeName: string, manager = "default-scheduler"): Promise<KubeObject> {
    const pods = resourceOf("pods");
    const pod = this.get(pods, namespace, name);
    const spec = pod.spec as Record<string, any>;
    if (spec.nodeName) throw errors.conflict(pods, name, `pod ${name} is already assigned to node "${spec.nodeName}"`);
    if (pod.metadata.deletionTimestamp) throw errors.conflict(pods, name, `pod ${name} is being deleted, cannot be assigned to a host`);
    const next = thaw(pod) as KubeObject & { spec: Record<string, any>; status: Record<string, any> };
    next.spec.nodeName = nodeName;
    const conditions = ((next.status.conditions ?? []) as Record<string, unknown>[]).filter((c) => c.type !== "PodScheduled");
    next.status.conditions = [{ type: "PodScheduled", status: "True", lastProbeTime: null, lastTransitionTime: timestamp() }, ...conditions];
    next.metadata.managedFields = recordUpdate(projection(pods, pod), projection(pods, next), pod.metadata.managedFields ?? [], {
      manager,
      apiVersion: "v1",
      time: timestamp(),
    });
    return this.store.put(pods, next);
  }

  // ---------------------------------------------------------------------------------------------
  // Deletes

  async delete(resource: ResourceType, namespace: string | undefined, name: string, options: DeleteOptions = {}): Promise<KubeObject> {
    const old = this.get(resource, namespace, name);
    const { uid, resourceVersion } = options.preconditions ?? {};
    if (uid && uid !== old.metadata.uid) {
      throw errors.conflict(resource, name, `Precondition failed: UID in precondition: ${uid}, UID in object meta: ${old.metadata.uid}`);
    }
    if (resourceVersion && resourceVersion !== old.metadata.resourceVersion) {
      throw errors.conflict(resource, name, `Precondition failed: ResourceVersion in precondition: ${resourceVersion}, ResourceVersion in object meta: ${old.metadata.resourceVersion}`);
    }
    if (options.gracePeriodSeconds !== undefined && (!Number.isInteger(options.gracePeriodSeconds) || options.gracePeriodSeconds < 0)) {
      throw errors.badRequest(`gracePeriodSeconds: Invalid value: ${options.gracePeriodSeconds}: must be a non-negative integer`);
    }
    if (options.dryRun) return old;
    if (options.propagationPolicy === "Orphan") this.#orphaning.add(old.metadata.uid!);
    const nowMs = Date.now();

    if (resource.resource === "pods") {
      const spec = old.spec as Record<string, any>;
      const phase = (old.status as Record<string, any> | undefined)?.phase;
      const grace = options.gracePeriodSeconds ?? old.metadata.deletionGracePeriodSeconds ?? spec.terminationGracePeriodSeconds ?? 30;
      // Never scheduled or already finished: nothing runs that needs a grace period.
      if (grace === 0 || !spec.nodeName || phase === "Succeeded" || phase === "Failed") return this.removeNow(resource, namespace, name)!;
      if (old.metadata.deletionTimestamp && grace >= (old.metadata.deletionGracePeriodSeconds ?? Infinity)) return old;
      const next = thaw(old);
      const deadline = nowMs + grace * 1000;
      const current = old.metadata.deletionTimestamp ? Date.parse(old.metadata.deletionTimestamp) : Infinity;
      next.metadata.deletionTimestamp = timestamp(Math.min(deadline, current));
      next.metadata.deletionGracePeriodSeconds = grace;
      next.metadata.generation = (old.metadata.generation ?? 1) + 1;
      return this.store.put(resource, next);
    }
    if (resource.resource === "namespaces") {
      if (old.metadata.deletionTimestamp) return old;
      const next = thaw(old);
      next.metadata.deletionTimestamp = timestamp(nowMs);
      next.metadata.deletionGracePeriodSeconds = 0;
      next.status = { ...(old.status as object), phase: "Terminating" };
      return this.store.put(resource, next);
    }
    if ((old.metadata.finalizers ?? []).length > 0) {
      if (old.metadata.deletionTimestamp) return old;
      const next = thaw(old);
      next.metadata.deletionTimestamp = timestamp(nowMs);
      next.metadata.deletionGracePeriodSeconds = 0;
      return this.store.put(resource, next);
    }
    return this.removeNow(resource, namespace, name)!;
  }

  async deleteCollection(resource: ResourceType, namespace: string | undefined, list: ListOptions, options: DeleteOptions): Promise<KubeObject[]> {
    const deleted: KubeObject[] = [];
    for (const object of this.list(resource, namespace, list).items) {
      try {
        deleted.push(await this.delete(resource, object.metadata.namespace, object.metadata.name!, options));
      } catch (error) {
        if (!(error instanceof ApiError && error.code === 404)) throw error;
      }
    }
    return deleted;
  }

  /** Removes an object at once (the kubelet's last word on a pod; finalizers done) and collects its dependents. */
  removeNow(resource: ResourceType, namespace: string | undefined, name: string): KubeObject | undefined {
    const removed = this.store.remove(resource, namespace, name);
    if (!removed) return undefined;
    const spec = removed.spec as Record<string, any> | undefined;
    if (resource.resource === "services" && spec?.clusterIP && spec.clusterIP !== "None") this.hooks.releaseClusterIP?.(spec.clusterIP);
    const uid = removed.metadata.uid!;
    const orphan = this.#orphaning.delete(uid);
    setImmediate(() => void this.#collectDependents(uid, orphan));
    return removed;
  }

  /** The garbage collector, background propagation: dependents of a removed owner are deleted (or orphaned). */
  async #collectDependents(ownerUid: string, orphan: boolean): Promise<void> {
    for (const resource of RESOURCES) {
      for (const object of this.store.list(resource)) {
        const refs = object.metadata.ownerReferences ?? [];
        if (!refs.some((ref: OwnerReference) => ref.uid === ownerUid)) continue;
        try {
          if (orphan || refs.length > 1) {
            const next = thaw(object);
            next.metadata.ownerReferences = refs.filter((ref) => ref.uid !== ownerUid);
            await this.#commitUpdate(resource, object, next, { fieldManager: "garbage-collector" });
            if (!orphan && next.metadata.ownerReferences.length === 0) await this.delete(resource, object.metadata.namespace, object.metadata.name!);
          } else await this.delete(resource, object.metadata.namespace, object.metadata.name!);
        } catch (error) {
          if (!(error instanceof ApiError && error.code === 404)) process.stderr.write(`berth-sim garbage collector: ${(error as Error).message}\n`);
        }
      }
    }
  }
}
