// A stable hash of what a role's pods are rendered from, for the `berth.dev/spec-hash` label:
// the agent compares it with running pods to spot drift. Counts the agent changes live
// (`replicas`, an elastic role's `width`) and the rollout strategy are left out, so scaling and resizing never mark
// survivors as stale. Pure and synchronous: canonical JSON, then 64-bit FNV-1a.
import type { DeploymentSpec, Role } from "../../src/domain/deployment-spec.ts";
import { DEFAULT_CLUSTER_DOMAIN, DEFAULT_ENGINE_PORT } from "./names.ts";
import type { RenderOptions } from "./types.ts";

/** The render options that shape engine pods; absent ones take their defaults. */
export type PodShapingOptions = Pick<RenderOptions, "enginePort" | "clusterDomain">;

/**
 * Bump when the renderer's output for an unchanged spec changes in a way running pods must
 * pick up (new flags, probes, volumes): every pod then shows drift and is replaced in turn.
 */
export const RENDER_VERSION = 2;

/** JSON with object keys sorted and undefined members dropped: equal values, equal text. */
export function canonicalJson(value: unknown): string {
  if (value === null || typeof value !== "object") return JSON.stringify(value) ?? "null";
  if (Array.isArray(value)) return `[${value.map((item) => canonicalJson(item === undefined ? null : item)).join(",")}]`;
  const entries = Object.entries(value as Record<string, unknown>)
    .filter(([, v]) => v !== undefined)
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonicalJson(v)}`).join(",")}}`;
}

const FNV_OFFSET = 0xcbf29ce484222325n;
const FNV_PRIME = 0x100000001b3n;
const MASK = 0xffffffffffffffffn;

/** 64-bit FNV-1a over the UTF-8 bytes of `text`, as 16 hex digits (a label value). */
export function fnv1a64(text: string): string {
  let hash = FNV_OFFSET;
  for (const byte of new TextEncoder().encode(text)) {
    hash ^= BigInt(byte);
    hash = (hash * FNV_PRIME) & MASK;
  }
  return hash.toString(16).padStart(16, "0");
}

/** The parts of a role that shape its pod template (everything but the live counts and the rollout strategy). */
function templateOf(role: Role): Record<string, unknown> {
  // `rollout` says how pods are replaced, not what they run: changing it alone must roll nothing.
  const { replicas: _replicas, rollout: _rollout, elastic, ...rest } = role;
  return { ...rest, elastic: elastic ? { maxWidth: elastic.maxWidth } : undefined };
}

/** What `specHashOf` reads: exported so tests can show which inputs matter. */
export function specHashInputs(spec: DeploymentSpec, roleName: string, options: PodShapingOptions = {}) {
  const role = spec.roles.find((r) => r.name === roleName);
  if (!role) throw new Error(`role "${roleName}" is not in the spec`);
  return {
    renderVersion: RENDER_VERSION,
    engine: spec.engine,
    model: spec.model,
    kvTransfer: spec.kvTransfer,
    // Router kind and the role set are immutable, but they shape args (encoder URLs, bootstrap annotations).
    routerKind: spec.router?.kind,
    roles: spec.roles.map((r) => ({ name: r.name, kind: r.kind })),
    role: templateOf(role),
    enginePort: options.enginePort ?? DEFAULT_ENGINE_PORT[spec.engine.name],
    clusterDomain: options.clusterDomain ?? DEFAULT_CLUSTER_DOMAIN,
  };
}

/**
 * The `berth.dev/spec-hash` of a role's pods: changes with the image, model, engine flags,
 * resources, parallelism, env, grace period …; not with `replicas` or `elastic.width`.
 */
export function specHashOf(spec: DeploymentSpec, roleName: string, options: PodShapingOptions = {}): string {
  return fnv1a64(canonicalJson(specHashInputs(spec, roleName, options)));
}
