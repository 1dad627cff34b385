// The simulated API server's object shape (plain JSON as stored and served) and its errors,
// which render as metav1.Status with the reasons and wording of the real API server, so
// client-node's ApiException and kubectl read them as they would from a real cluster.
import type { ManagedFieldsEntry } from "./patch.ts";

export interface OwnerReference {
  apiVersion: string;
  kind: string;
  name: string;
  uid: string;
  controller?: boolean;
  blockOwnerDeletion?: boolean;
}

export interface ObjectMeta {
  name?: string;
  generateName?: string;
  namespace?: string;
  uid?: string;
  resourceVersion?: string;
  generation?: number;
  creationTimestamp?: string;
  deletionTimestamp?: string;
  deletionGracePeriodSeconds?: number;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
  ownerReferences?: OwnerReference[];
  finalizers?: string[];
  managedFields?: ManagedFieldsEntry[];
}

export interface KubeObject {
  apiVersion?: string;
  kind?: string;
  metadata: ObjectMeta;
  // Everything else (spec, status, data, …) is whatever the kind holds.
  [field: string]: unknown;
}

/** RFC 3339 with seconds, as metav1.Time serializes. */
export const timestamp = (at: number = Date.now()) => new Date(at).toISOString().replace(/\.\d{3}Z$/, "Z");
/** metav1.MicroTime. */
export const microTimestamp = (at: number = Date.now()) => new Date(at).toISOString().replace(/Z$/, "000Z");

export interface StatusCause {
  reason?: string;
  message: string;
  field?: string;
}

export interface StatusDetails {
  name?: string;
  group?: string;
  kind?: string;
  uid?: string;
  causes?: StatusCause[];
  retryAfterSeconds?: number;
}

export class ApiError extends Error {
  constructor(
    readonly code: number,
    readonly reason: string,
    message: string,
    readonly details?: StatusDetails,
  ) {
    super(message);
  }

  toStatus(): KubeObject {
    return {
      kind: "Status",
      apiVersion: "v1",
      metadata: {},
      status: "Failure",
      message: this.message,
      reason: this.reason,
      ...(this.details && { details: this.details }),
      code: this.code,
    };
  }
}

/** How errors name a resource: `pods`, `deployments.apps`. */
export interface ResourceName {
  resource: string;
  group: string;
  kind: string;
}

const qualified = (r: ResourceName) => (r.group ? `${r.resource}.${r.group}` : r.resource);
const details = (r: ResourceName, name: string): StatusDetails => ({ name, ...(r.group && { group: r.group }), kind: r.resource });

export const errors = {
  notFound: (r: ResourceName, name: string) => new ApiError(404, "NotFound", `${qualified(r)} "${name}" not found`, details(r, name)),
  alreadyExists: (r: ResourceName, name: string) => new ApiError(409, "AlreadyExists", `${qualified(r)} "${name}" already exists`, details(r, name)),
  conflict: (r: ResourceName, name: string, why: string) =>
    new ApiError(409, "Conflict", `Operation cannot be fulfilled on ${qualified(r)} "${name}": ${why}`, details(r, name)),
  stale: (r: ResourceName, name: string) =>
    errors.conflict(r, name, "the object has been modified; please apply your changes to the latest version and try again"),
  invalid: (r: ResourceName, name: string, causes: StatusCause[]) =>
    new ApiError(
      422,
      "Invalid",
      `${r.group ? `${r.kind}.${r.group}` : r.kind} "${name}" is invalid: ${causes.map((c) => (c.field ? `${c.field}: ${c.message}` : c.message)).join(", ")}`,
      { name, ...(r.group && { group: r.group }), kind: r.kind, causes },
    ),
  badRequest: (message: string) => new ApiError(400, "BadRequest", message),
  forbidden: (r: ResourceName, name: string, why: string) =>
    new ApiError(403, "Forbidden", `${qualified(r)} "${name}" is forbidden: ${why}`, details(r, name)),
  methodNotAllowed: (message = "the server does not allow this method on the requested resource") => new ApiError(405, "MethodNotAllowed", message),
  unsupportedMediaType: (type: string) => new ApiError(415, "UnsupportedMediaType", `the body of the request was in an unknown format - accepted media types include: application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml, application/strategic-merge-patch+json (got ${type})`),
  expired: (message: string) => new ApiError(410, "Expired", message),
  unauthorized: () => new ApiError(401, "Unauthorized", "Unauthorized"),
  pathNotFound: () => new ApiError(404, "NotFound", "the server could not find the requested resource"),
};

/** A field problem for errors.invalid: `Required value`, `Invalid value: "x": why`, `Forbidden: why`. */
export const fieldError = {
  required: (field: string, detail?: string): StatusCause => ({ reason: "FieldValueRequired", field, message: `Required value${detail ? `: ${detail}` : ""}` }),
  invalid: (field: string, value: unknown, detail: string): StatusCause => ({
    reason: "FieldValueInvalid",
    field,
    message: `Invalid value: ${JSON.stringify(value)}: ${detail}`,
  }),
  forbidden: (field: string, detail: string): StatusCause => ({ reason: "FieldValueForbidden", field, message: `Forbidden: ${detail}` }),
  immutable: (field: string, value: unknown): StatusCause => ({
    reason: "FieldValueInvalid",
    field,
    message: `Invalid value: ${JSON.stringify(value)}: field is immutable`,
  }),
};

export function deepFreeze<T>(value: T): T {
  if (value !== null && typeof value === "object" && !Object.isFrozen(value)) {
    Object.freeze(value);
    for (const child of Object.values(value as object)) deepFreeze(child);
  }
  return value;
}

/** A mutable copy of a stored (frozen) object. */
export const thaw = <T>(value: T): T => structuredClone(value);

export const metaKey = (namespace: string | undefined, name: string) => (namespace ? `${namespace}/${name}` : name);

const SAFE = "bcdfghjklmnpqrstvwxz2456789";
/** Random suffix in the apiserver's alphabet (no vowels, no look-alikes), for generateName. */
export function randomSuffix(length = 5): string {
  const bytes = crypto.getRandomValues(new Uint8Array(length));
  return Array.from(bytes, (b) => SAFE[b % SAFE.length]).join("");
}

/** A hash as the apiserver's SafeEncodeString renders it (pod-template-hash, slice names). */
export function safeEncode(hex: string, length = 10): string {
  let out = "";
  for (let i = 0; out.length < length && i < hex.length; i++) out += SAFE[parseInt(hex[i]!, 16) % SAFE.length];
  return out;
}
