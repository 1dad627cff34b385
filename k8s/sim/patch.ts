// Patches and field ownership (pure). Four patch types as the API server takes them:
//   application/merge-patch+json            RFC 7396 (null deletes, arrays replace)
//   application/json-patch+json             RFC 6902 (add, remove, replace, move, copy, test)
//   application/strategic-merge-patch+json  merge, except lists with a known merge key (containers,
//                                           env, volumes, ports, conditions…) merge item by item, and
//                                           `$patch: delete|replace`, `$deleteFromPrimitiveList/…` work
//   application/apply-patch+yaml            server-side apply: the applied configuration merges into the
//                                           live object; fields this manager applied before and left out
//                                           now are removed unless another manager owns them; a field
//                                           another manager owns with a different value is a conflict
//                                           unless forced (then ownership moves).
// Ownership is kept as structured-merge-diff does: per manager, a set of field paths serialized as
// `fieldsV1` (`f:<field>`, `k:<list item key JSON>`, `.` for a list item itself).

export type Json = null | boolean | number | string | Json[] | JsonObject;
export interface JsonObject {
  [key: string]: Json;
}

export class PatchError extends Error {
  constructor(
    message: string,
    readonly status: 400 | 422 = 422,
  ) {
    super(message);
  }
}

export const isObject = (value: unknown): value is JsonObject => value !== null && typeof value === "object" && !Array.isArray(value);

export function deepEqual(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (Array.isArray(a)) return Array.isArray(b) && a.length === b.length && a.every((item, i) => deepEqual(item, b[i]));
  if (isObject(a) && isObject(b)) {
    const keys = Object.keys(a);
    if (keys.length !== Object.keys(b).length) return false;
    return keys.every((key) => Object.prototype.hasOwnProperty.call(b, key) && deepEqual(a[key], b[key]));
  }
  return false;
}

const clone = <T>(value: T): T => structuredClone(value);

// ---------------------------------------------------------------------------------------------
// RFC 7396 merge patch

export function mergePatch(target: Json | undefined, patch: Json): Json {
  if (!isObject(patch)) return clone(patch);
  const result: JsonObject = isObject(target) ? { ...target } : {};
  for (const [key, value] of Object.entries(patch)) {
    if (value === null) delete result[key];
    else result[key] = mergePatch(result[key], value);
  }
  return result;
}

// ---------------------------------------------------------------------------------------------
// RFC 6902 JSON patch

export interface JsonPatchOperation {
  op: string;
  path: string;
  value?: Json;
  from?: string;
}

function parsePointer(pointer: string): string[] {
  if (pointer === "") return [];
  if (!pointer.startsWith("/")) throw new PatchError(`invalid JSON pointer "${pointer}"`);
  return pointer
    .slice(1)
    .split("/")
    .map((token) => token.replace(/~1/g, "/").replace(/~0/g, "~"));
}

function arrayIndex(array: Json[], token: string, forAdd: boolean): number {
  if (forAdd && token === "-") return array.length;
  if (!/^(0|[1-9]\d*)$/.test(token)) throw new PatchError(`invalid array index "${token}"`);
  const index = Number(token);
  if (index > array.length || (!forAdd && index === array.length)) throw new PatchError(`array index ${index} out of bounds`);
  return index;
}

function resolveParent(doc: Json, tokens: string[], pointer: string): { parent: Json; key: string } {
  let node: Json = doc;
  for (const token of tokens.slice(0, -1)) {
    if (Array.isArray(node)) node = node[arrayIndex(node, token, false)]!;
    else if (isObject(node) && Object.prototype.hasOwnProperty.call(node, token)) node = node[token]!;
    else throw new PatchError(`doc is missing path: "${pointer}"`);
  }
  return { parent: node, key: tokens[tokens.length - 1]! };
}

function getAt(doc: Json, pointer: string): Json {
  let node: Json = doc;
  for (const token of parsePointer(pointer)) {
    if (Array.isArray(node)) node = node[arrayIndex(node, token, false)]!;
    else if (isObject(node) && Object.prototype.hasOwnProperty.call(node, token)) node = node[token]!;
    else throw new PatchError(`doc is missing path: "${pointer}"`);
  }
  return node;
}

function addAt(doc: Json, pointer: string, value: Json): Json {
  const tokens = parsePointer(pointer);
  if (tokens.length === 0) return clone(value);
  const { parent, key } = resolveParent(doc, tokens, pointer);
  if (Array.isArray(parent)) parent.splice(arrayIndex(parent, key, true), 0, clone(value));
  else if (isObject(parent)) parent[key] = clone(value);
  else throw new PatchError(`doc is missing path: "${pointer}"`);
  return doc;
}

function removeAt(doc: Json, pointer: string): Json {
  const tokens = parsePointer(pointer);
  if (tokens.length === 0) throw new PatchError("cannot remove the whole document");
  const { parent, key } = resolveParent(doc, tokens, pointer);
  if (Array.isArray(parent)) parent.splice(arrayIndex(parent, key, false), 1);
  else if (isObject(parent) && Object.prototype.hasOwnProperty.call(parent, key)) delete parent[key];
  else throw new PatchError(`unable to remove nonexistent key: ${key}: missing value`);
  return doc;
}

export function jsonPatch(document: Json, operations: unknown): Json {
  if (!Array.isArray(operations)) throw new PatchError("a JSON patch must be an array of operations", 400);
  let doc = clone(document);
  for (const raw of operations as JsonPatchOperation[]) {
    if (!isObject(raw as unknown) || typeof raw.path !== "string") throw new PatchError("every JSON patch operation needs op and path", 400);
    switch (raw.op) {
      case "add":
        doc = addAt(doc, raw.path, raw.value ?? null);
        break;
      case "remove":
        doc = removeAt(doc, raw.path);
        break;
      case "replace":
        getAt(doc, raw.path);
        doc = parsePointer(raw.path).length === 0 ? clone(raw.value ?? null) : addAt(removeAt(doc, raw.path), raw.path, raw.value ?? null);
        break;
      case "move": {
        const value = getAt(doc, raw.from ?? "");
        doc = addAt(removeAt(doc, raw.from ?? ""), raw.path, value);
        break;
      }
      case "copy":
        doc = addAt(doc, raw.path, getAt(doc, raw.from ?? ""));
        break;
      case "test":
        if (!deepEqual(getAt(doc, raw.path), raw.value ?? null)) throw new PatchError(`testing value ${raw.path} failed: test failed`);
        break;
      default:
        throw new PatchError(`unexpected kind: ${String(raw.op)}`, 400);
    }
  }
  return doc;
}

// ---------------------------------------------------------------------------------------------
// List keys shared by strategic merge and server-side apply

const KEYED_BY_NAME = new Set(["containers", "initContainers", "ephemeralContainers", "env", "volumes", "imagePullSecrets", "resourceClaims"]);
const KEYED_BY: Record<string, string> = {
  volumeMounts: "mountPath",
  volumeDevices: "devicePath",
  conditions: "type",
  hostAliases: "ip",
  ownerReferences: "uid",
};

/** The field that identifies the items of the list `field`, or undefined for an atomic list. */
export function listKey(field: string | undefined, items: readonly Json[]): string | undefined {
  if (field === undefined) return undefined;
  let key: string | undefined;
  if (field === "ports") key = items.length > 0 && items.every((item) => isObject(item) && "containerPort" in item) ? "containerPort" : "port";
  else if (KEYED_BY_NAME.has(field)) key = "name";
  else key = KEYED_BY[field];
  if (key === undefined) return undefined;
  return items.every((item) => isObject(item) && item[key] !== undefined) ? key : undefined;
}

const sameKey = (key: string, a: Json, b: Json) => isObject(a) && isObject(b) && deepEqual(a[key], b[key]);

// ---------------------------------------------------------------------------------------------
// Strategic merge patch

function stripDirectives(value: Json): Json {
  if (Array.isArray(value)) return value.map(stripDirectives);
  if (!isObject(value)) return value;
  const out: JsonObject = {};
  for (const [key, child] of Object.entries(value)) if (!key.startsWith("$")) out[key] = stripDirectives(child);
  return out;
}

export function strategicMergePatch(target: Json | undefined, patch: Json): Json {
  if (!isObject(patch)) return clone(patch);
  if (patch.$patch === "replace") return stripDirectives(patch);
  const result: JsonObject = isObject(target) ? { ...target } : {};
  for (const [key, value] of Object.entries(patch)) {
    if (key.startsWith("$deleteFromPrimitiveList/")) {
      const field = key.slice("$deleteFromPrimitiveList/".length);
      const current = result[field];
      if (Array.isArray(current) && Array.isArray(value)) result[field] = current.filter((item) => !value.some((v) => deepEqual(v, item)));
      continue;
    }
    if (key.startsWith("$")) continue;
    if (value === null) {
      delete result[key];
      continue;
    }
    const current = result[key];
    if (Array.isArray(value)) {
      const merge = Array.isArray(current) ? listKey(key, [...current, ...value.filter((item) => !(isObject(item) && item.$patch))]) : undefined;
      if (merge && Array.isArray(current)) {
        const out = current.map(clone);
        for (const item of value) {
          const index = out.findIndex((existing) => sameKey(merge, existing, item));
          if (isObject(item) && item.$patch === "delete") {
            if (index >= 0) out.splice(index, 1);
          } else if (index >= 0) out[index] = strategicMergePatch(out[index], item);
          else out.push(stripDirectives(item));
        }
        result[key] = out;
      } else result[key] = value.filter((item) => !(isObject(item) && item.$patch === "delete")).map(stripDirectives);
      continue;
    }
    if (isObject(value) && value.$patch === "delete") {
      delete result[key];
      continue;
    }
    result[key] = strategicMergePatch(current, value);
  }
  return result;
}

// ---------------------------------------------------------------------------------------------
// Field sets (structured-merge-diff paths) and managed fields

/** One path as fieldsV1 elements joined by "\n": `f:spec\nf:containers\nk:{"name":"engine"}\nf:image`. */
export type FieldPath = string;
const SEP = "\n";

function itemElement(key: string, item: JsonObject): string {
  return `k:${JSON.stringify({ [key]: item[key] })}`;
}

/**
 * Leaf paths of a value, plus one path per item of a keyed list (the item itself, `.` in fieldsV1).
 * Empty objects and atomic lists are leaves.
 */
export function fieldSet(value: JsonObject, prefix: string[] = [], out = new Set<FieldPath>()): Set<FieldPath> {
  for (const [key, child] of Object.entries(value)) {
    const path = [...prefix, `f:${key}`];
    if (isObject(child) && Object.keys(child).length > 0) fieldSet(child, path, out);
    else if (Array.isArray(child) && child.length > 0 && listKey(key, child) !== undefined) {
      const itemKey = listKey(key, child)!;
      for (const item of child as JsonObject[]) {
        const itemPath = [...path, itemElement(itemKey, item)];
        out.add(itemPath.join(SEP));
        fieldSet(item, itemPath, out);
      }
    } else out.add(path.join(SEP));
  }
  return out;
}

/** The value at a field path, or undefined. */
export function valueAt(root: Json, path: FieldPath): Json | undefined {
  let node: Json | undefined = root;
  for (const element of path.split(SEP)) {
    if (element.startsWith("f:")) {
      if (!isObject(node)) return undefined;
      node = node[element.slice(2)];
    } else if (element.startsWith("k:")) {
      if (!Array.isArray(node)) return undefined;
      const wanted = JSON.parse(element.slice(2)) as JsonObject;
      node = node.find((item) => isObject(item) && Object.entries(wanted).every(([k, v]) => deepEqual(item[k], v)));
    } else return undefined;
    if (node === undefined) return undefined;
  }
  return node;
}

/** Removes the field (or list item) at a path, then any object it leaves empty below the top level. */
export function removePath(root: JsonObject, path: FieldPath): void {
  const elements = path.split(SEP);
  const chain: { node: Json; element: string }[] = [];
  let node: Json | undefined = root;
  for (const element of elements) {
    if (node === undefined) return;
    chain.push({ node, element });
    node = valueAt(node, element);
  }
  if (node === undefined) return;
  for (let i = chain.length - 1; i >= 0; i--) {
    const { node: parent, element } = chain[i]!;
    if (element.startsWith("f:") && isObject(parent)) delete parent[element.slice(2)];
    else if (Array.isArray(parent)) {
      const item = valueAt(parent, element);
      parent.splice(parent.indexOf(item as Json), 1);
    }
    // Walk up only through objects this removal emptied (never the top-level spec/metadata).
    const empty = isObject(parent) ? Object.keys(parent).length === 0 : false;
    if (!empty || i <= 1) break;
  }
}

export function toFieldsV1(paths: Iterable<FieldPath>): JsonObject {
  const root: JsonObject = {};
  for (const path of paths) {
    let node = root;
    const elements = path.split(SEP);
    for (const element of elements) node = (node[element] as JsonObject | undefined) ?? (node[element] = {});
    if (elements[elements.length - 1]!.startsWith("k:")) node["."] = {};
  }
  return root;
}

export function fromFieldsV1(fields: JsonObject | undefined, prefix: string[] = [], out = new Set<FieldPath>()): Set<FieldPath> {
  for (const [element, child] of Object.entries(fields ?? {})) {
    if (element === ".") {
      out.add(prefix.join(SEP));
      continue;
    }
    const path = [...prefix, element];
    if (!isObject(child) || Object.keys(child).length === 0) out.add(path.join(SEP));
    else fromFieldsV1(child, path, out);
  }
  return out;
}

export interface ManagedFieldsEntry {
  manager: string;
  operation: "Apply" | "Update";
  apiVersion?: string;
  time?: string;
  fieldsType?: "FieldsV1";
  fieldsV1?: JsonObject;
  subresource?: string;
}

interface OwnedSet {
  entry: ManagedFieldsEntry;
  paths: Set<FieldPath>;
}

const owned = (entries: readonly ManagedFieldsEntry[]): OwnedSet[] =>
  entries.map((entry) => ({ entry, paths: fromFieldsV1(entry.fieldsV1) }));

function toEntries(sets: OwnedSet[]): ManagedFieldsEntry[] {
  return sets
    .filter((set) => set.paths.size > 0)
    .map(({ entry, paths }) => ({ ...entry, fieldsType: "FieldsV1" as const, fieldsV1: toFieldsV1([...paths].sort()) }));
}

const isItem = (path: FieldPath) => path.slice(path.lastIndexOf(SEP) + 1).startsWith("k:");

export interface OwnershipOptions {
  manager: string;
  apiVersion: string;
  time: string;
  /** `status` for writes to the status subresource. */
  subresource?: string;
}

/**
 * Ownership after a non-apply write (create, update, merge/JSON/strategic patch): the writer
 * takes every field it set or changed; removed fields leave every owner.
 */
export function recordUpdate(before: JsonObject | undefined, after: JsonObject, entries: readonly ManagedFieldsEntry[], options: OwnershipOptions): ManagedFieldsEntry[] {
  const previous = before ? fieldSet(before) : new Set<FieldPath>();
  const next = fieldSet(after);
  const changed = [...next].filter((path) => !previous.has(path) || (!isItem(path) && !deepEqual(valueAt(before!, path), valueAt(after, path))));
  const removed = [...previous].filter((path) => !next.has(path));
  const sets = owned(entries);
  for (const set of sets) for (const path of [...changed, ...removed]) set.paths.delete(path);
  if (changed.length > 0) {
    let mine = sets.find((s) => s.entry.manager === options.manager && s.entry.operation === "Update" && s.entry.subresource === options.subresource);
    if (!mine) {
      mine = { entry: { manager: options.manager, operation: "Update", apiVersion: options.apiVersion, time: options.time, ...(options.subresource && { subresource: options.subresource }) }, paths: new Set() };
      sets.push(mine);
    }
    mine.entry = { ...mine.entry, time: options.time, apiVersion: options.apiVersion };
    for (const path of changed) mine.paths.add(path);
  }
  return toEntries(sets);
}

export interface Conflict {
  manager: string;
  path: FieldPath;
}

export class ApplyConflictError extends Error {
  constructor(readonly conflicts: Conflict[]) {
    super(
      `Apply failed with ${conflicts.length} conflict${conflicts.length === 1 ? "" : "s"}: ` +
        conflicts.map((c) => `conflict with "${c.manager}": ${describePath(c.path)}`).join("; "),
    );
  }
}

/** `.spec.containers[name="engine"].image`, as the API server words a conflicting field. */
export function describePath(path: FieldPath): string {
  return path
    .split(SEP)
    .map((element) => {
      if (element.startsWith("f:")) return `.${element.slice(2)}`;
      const key = JSON.parse(element.slice(2)) as JsonObject;
      return `[${Object.entries(key)
        .map(([k, v]) => `${k}=${JSON.stringify(v)}`)
        .join(",")}]`;
    })
    .join("");
}

function mergeApplied(live: Json | undefined, applied: Json, field?: string): Json {
  if (isObject(applied)) {
    const out: JsonObject = isObject(live) ? { ...live } : {};
    for (const [key, value] of Object.entries(applied)) out[key] = mergeApplied(out[key], value, key);
    return out;
  }
  if (Array.isArray(applied) && Array.isArray(live)) {
    const key = listKey(field, [...live, ...applied]);
    if (key) {
      const out = live.map(clone);
      for (const item of applied) {
        const index = out.findIndex((existing) => sameKey(key, existing, item));
        if (index >= 0) out[index] = mergeApplied(out[index], item);
        else out.push(clone(item));
      }
      return out;
    }
  }
  return clone(applied);
}

export interface ApplyOptions extends OwnershipOptions {
  force: boolean;
}

/**
 * Server-side apply of `applied` (already stripped of what the server owns) onto `live` (the
 * same projection of the stored object; undefined to create). Returns the merged projection and
 * the new managed fields, or throws ApplyConflictError.
 */
export function serverSideApply(
  live: JsonObject | undefined,
  applied: JsonObject,
  entries: readonly ManagedFieldsEntry[],
  options: ApplyOptions,
): { object: JsonObject; managedFields: ManagedFieldsEntry[] } {
  const base: JsonObject = live ? clone(live) : {};
  const want = fieldSet(applied);
  const sets = owned(entries);
  const isMine = (set: OwnedSet) => set.entry.manager === options.manager && set.entry.operation === "Apply" && set.entry.subresource === options.subresource;
  const mine = sets.find(isMine);
  const others = sets.filter((set) => !isMine(set));

  const conflicts: Conflict[] = [];
  for (const other of others) {
    for (const path of want) {
      if (!other.paths.has(path) || isItem(path)) continue;
      if (deepEqual(valueAt(applied, path), valueAt(base, path))) continue;
      if (options.force) other.paths.delete(path);
      else conflicts.push({ manager: other.entry.manager, path });
    }
  }
  if (conflicts.length > 0) throw new ApplyConflictError(conflicts);

  // Fields this manager applied before and no longer applies go, unless someone else holds them.
  const ownedByOthers = (path: FieldPath) => others.some((o) => [...o.paths].some((p) => p === path || p.startsWith(path + SEP)));
  const dropped = [...(mine?.paths ?? [])].filter((path) => !want.has(path) && !ownedByOthers(path));
  dropped.sort((a, b) => b.split(SEP).length - a.split(SEP).length);
  for (const path of dropped) removePath(base, path);

  const object = mergeApplied(base, applied) as JsonObject;
  const entry: ManagedFieldsEntry = {
    manager: options.manager,
    operation: "Apply",
    apiVersion: options.apiVersion,
    time: options.time,
    ...(options.subresource && { subresource: options.subresource }),
  };
  const next = mine ? sets.map((set) => (set === mine ? { entry, paths: want } : set)) : [...sets, { entry, paths: want }];
  return { object, managedFields: toEntries(next) };
}
