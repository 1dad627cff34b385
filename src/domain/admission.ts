// Admission rules for a defaulted deployment spec (docs/design.md §3.1, "Admission refuses"): shape, router,
// elastic, Kubernetes names, owned flags, fit, scaling, identity on update and cluster capacity.
// Pure: returns every problem at once, each at a JSON pointer from the request body's root.
import {
  isDisaggregated,
  isDns1035Label,
  isDns1123Label,
  toJsonPointer,
  type DeploymentSpec,
  type Role,
  type RoleKind,
} from "./deployment-spec.ts";
import type { FieldError } from "./errors.ts";
import { findOwnedEnv, findOwnedFlag } from "./owned-flags.ts";

export interface AdmissionContext {
  /** The stored spec, present on update: identity fields may not change. */
  previous?: DeploymentSpec;
  /** Target cluster capacity, when known (from its last inventory). */
  cluster?: { totalGpus: number; gpusByType?: Record<string, number> };
}

const IMMUTABLE = "immutable: create a new deployment instead";
const MAX_NAME = 63;

const at = (...path: (string | number)[]) => toJsonPointer("", path);
const role$ = (i: number, ...rest: (string | number)[]) => at("spec", "roles", i, ...rest);

/** GPUs one role holds: replicas × size × gpus, or replicas × width × gpus for an elastic role. */
export function countRoleGpus(role: Role): number {
  const podsPerInstance = role.elastic ? role.elastic.width : role.size;
  return role.replicas * podsPerInstance * role.resources.gpus;
}

/** GPUs the whole deployment holds, elastic roles at their current width (quota and capacity). */
export function countGpus(spec: DeploymentSpec): number {
  return spec.roles.reduce((sum, role) => sum + countRoleGpus(role), 0);
}

/** Every admission problem of `spec` for deployment `name`; empty means admitted. */
export function admitDeploymentSpec(name: string, spec: DeploymentSpec, ctx: AdmissionContext): FieldError[] {
  const errors: FieldError[] = [];
  checkNames(name, spec, errors);
  checkShape(spec, errors);
  checkRouter(spec, errors);
  checkElastic(spec, errors);
  checkPodNames(name, spec, errors);
  spec.roles.forEach((role, i) => {
    if (role.command.length > 0) return; // take-over tier: the user owns the whole argv
    checkOwnedKeys(spec, role, i, errors);
    checkFit(role, i, errors);
  });
  checkScaling(spec, errors);
  checkRollout(spec, errors);
  if (ctx.previous) checkIdentity(spec, ctx.previous, errors);
  if (ctx.cluster) checkCapacity(spec, ctx.cluster, errors);
  return errors;
}

function checkNames(name: string, spec: DeploymentSpec, errors: FieldError[]): void {
  if (!isDns1035Label(name)) {
    errors.push({
      pointer: "/name",
      message: `name "${name}" must be a DNS-1035 label of at most 63 characters: lower-case letters, digits and '-', starting with a letter`,
    });
  }
  const seen = new Set<string>();
  spec.roles.forEach((role, i) => {
    if (!isDns1035Label(role.name)) {
      errors.push({
        pointer: role$(i, "name"),
        message: `role name "${role.name}" must be a DNS-1035 label: lower-case letters, digits and '-', starting with a letter`,
      });
    }
    if (seen.has(role.name)) {
      errors.push({ pointer: role$(i, "name"), message: `role name "${role.name}" is used twice; give each role its own name` });
    }
    seen.add(role.name);
  });
}

function indicesOf(spec: DeploymentSpec, kind: RoleKind): number[] {
  return spec.roles.flatMap((role, i) => (role.kind === kind ? [i] : []));
}

function checkShape(spec: DeploymentSpec, errors: FieldError[]): void {
  const servers = indicesOf(spec, "server");
  const prefill = indicesOf(spec, "prefill");
  const decode = indicesOf(spec, "decode");
  const encode = indicesOf(spec, "encode");

  if (servers.length > 0 && spec.roles.length > 1) {
    const others = spec.roles.length - servers.length;
    if (others > 0) {
      for (const i of servers) {
        errors.push({
          pointer: role$(i, "kind"),
          message: `a server role must be the only role; use prefill/decode(/encode) roles for disaggregated serving, or put the server in its own deployment`,
        });
      }
    } else {
      for (const i of servers.slice(1)) {
        errors.push({
          pointer: role$(i, "kind"),
          message: `only one server role is allowed; raise replicas on "${spec.roles[servers[0]!]!.name}" or create another deployment`,
        });
      }
    }
  }
  for (const [kind, indices] of [["prefill", prefill], ["decode", decode], ["encode", encode]] as const) {
    for (const i of indices.slice(1)) {
      errors.push({
        pointer: role$(i, "kind"),
        message: `at most one ${kind} role is allowed; raise replicas on "${spec.roles[indices[0]!]!.name}" instead`,
      });
    }
  }
  if (prefill.length > 0 && decode.length === 0) {
    errors.push({ pointer: role$(prefill[0]!, "kind"), message: "a prefill role needs a decode role; add one" });
  }
  if (decode.length > 0 && prefill.length === 0) {
    errors.push({ pointer: role$(decode[0]!, "kind"), message: "a decode role needs a prefill role; add one" });
  }
  if (encode.length > 0 && (prefill.length === 0 || decode.length === 0)) {
    errors.push({
      pointer: role$(encode[0]!, "kind"),
      message: "an encode role needs a prefill and a decode role (EPD); add them or remove the encode role",
    });
  }
  if (encode.length > 0 && spec.engine.name === "sglang") {
    // docs/decisions/0057: SGLang's encoder (--encoder-only) is its own server answering POST /encode
    // to the language-only prefill, which calls it itself (sglang python/sglang/srt/disaggregation/
    // encode_server.py, encode_receiver.py); berth's simulator does not run that exchange, so berth
    // cannot show such a deployment working.
    errors.push({
      pointer: role$(encode[0]!, "kind"),
      message:
        "encode roles are supported with engine vllm only: SGLang's encoder serves POST /encode to its language-only prefill " +
        "(sglang python/sglang/srt/disaggregation/encode_server.py), an exchange berth does not run yet; use engine vllm for EPD, or drop the encode role",
    });
  }
  if (spec.kvTransfer && !isDisaggregated(spec.roles)) {
    errors.push({
      pointer: at("spec", "kvTransfer"),
      message: "kvTransfer applies only to prefill/decode roles; remove it or make the roles disaggregated",
    });
  }
}

function checkRouter(spec: DeploymentSpec, errors: FieldError[]): void {
  const needs: string[] = [];
  if (isDisaggregated(spec.roles)) needs.push("prefill/decode roles");
  const external = spec.roles.filter((role) => role.parallelism.externalDP && !role.elastic);
  if (external.length > 0) needs.push(`external DP (role ${external.map((r) => `"${r.name}"`).join(", ")})`);
  if (needs.length > 0 && !spec.router) {
    errors.push({
      pointer: at("spec", "router"),
      message: `${needs.join(" and ")} need a router to reach every endpoint; add "router": {} (the built-in router)`,
    });
  }
  if (spec.router && isDisaggregated(spec.roles)) {
    const mismatch =
      (spec.router.kind === "vllm-router" && spec.engine.name !== "vllm") ||
      (spec.router.kind === "sglang-gateway" && spec.engine.name !== "sglang");
    if (mismatch) {
      errors.push({
        pointer: at("spec", "router", "kind"),
        message: `router ${spec.router.kind} cannot run ${spec.engine.name}'s prefill/decode protocol; use builtin or the router of ${spec.engine.name}`,
      });
    }
  }
}

function checkElastic(spec: DeploymentSpec, errors: FieldError[]): void {
  spec.roles.forEach((role, i) => {
    const elastic = role.elastic;
    if (!elastic) return;
    if (spec.engine.name !== "vllm") {
      errors.push({ pointer: role$(i, "elastic"), message: `elastic expert parallelism needs engine vllm, not ${spec.engine.name}; remove elastic` });
    }
    if (spec.roles.length > 1) {
      errors.push({
        pointer: role$(i, "elastic"),
        message: "an elastic role must be the deployment's only role; put the other roles in their own deployment",
      });
    }
    if (elastic.width < 2 || elastic.width > elastic.maxWidth) {
      errors.push({
        pointer: role$(i, "elastic", "width"),
        message: `elastic.width ${elastic.width} must be within 2..maxWidth (${elastic.maxWidth}); ${
          elastic.width < 2 ? "use width 2 or more, or drop elastic for a single rank" : "lower width or raise maxWidth"
        }`,
      });
    }
    if (role.parallelism.pipeline > 1) {
      errors.push({ pointer: role$(i, "parallelism", "pipeline"), message: "elastic EP cannot use pipeline parallelism; set pipeline to 1" });
    }
    if (role.parallelism.externalDP) {
      errors.push({ pointer: role$(i, "parallelism", "externalDP"), message: "elastic EP cannot run with external DP; set externalDP to false" });
    }
    if (role.size !== 1) {
      errors.push({
        pointer: role$(i, "size"),
        message: "an elastic role runs one pod per DP rank (elastic.width sets how many); set size to 1",
      });
    }
    if (role.command.length > 0) {
      errors.push({ pointer: role$(i, "command"), message: "berth must render an elastic role's command to resize it; remove command" });
    }
    const group = role.parallelism.tensor * role.parallelism.pipeline;
    if (role.resources.gpus !== group) {
      errors.push({
        pointer: role$(i, "resources", "gpus"),
        message: `each elastic pod holds one tensor × pipeline group = ${role.parallelism.tensor} × ${role.parallelism.pipeline} = ${group} GPUs, but gpus is ${role.resources.gpus}; set gpus to ${group} or change tensor`,
      });
    }
  });
}

/** `<name>-<role>-r<replica>-m<member>` for the largest indices the role can reach. */
function checkPodNames(name: string, spec: DeploymentSpec, errors: FieldError[]): void {
  if (!isDns1035Label(name)) return; // reported already
  spec.roles.forEach((role, i) => {
    if (!isDns1035Label(role.name)) return;
    // A rollout's surge instances take the indexes just above replicas.
    const surge = role.rollout?.maxSurge ?? 0;
    const maxReplicas = Math.max(role.replicas, ...(spec.scaling?.roles.filter((s) => s.name === role.name).map((s) => s.maxReplicas) ?? []), 1) + surge;
    const members = role.elastic ? Math.max(role.elastic.maxWidth, role.elastic.width) : role.size;
    const longest = `${name}-${role.name}-r${maxReplicas - 1}-m${members - 1}`;
    if (longest.length > MAX_NAME || !isDns1123Label(longest)) {
      const over = longest.length - MAX_NAME;
      errors.push({
        pointer: role$(i, "name"),
        message: `pod name "${longest}" would be ${longest.length} characters, ${over} over the ${MAX_NAME} limit; shorten the deployment name (${name.length}) or the role name (${role.name.length}) by ${over}`,
      });
    }
  });
}

function checkOwnedKeys(spec: DeploymentSpec, role: Role, i: number, errors: FieldError[]): void {
  const engine = spec.engine.name;
  role.extraArgs.forEach((arg, j) => {
    const owned = findOwnedFlag(engine, arg);
    if (!owned) return;
    const spelled = arg.split("=", 1)[0]!;
    errors.push({
      pointer: role$(i, "extraArgs", j),
      message: `${spelled}${spelled === owned.flag ? "" : ` (${owned.flag})`} is owned by berth for ${engine} and set from ${owned.controlledBy}: ${owned.reason}. Remove it from extraArgs, or take over the whole command with command`,
    });
  });
  role.env.forEach((env, j) => {
    const owned = findOwnedEnv(engine, env.name);
    if (!owned) return;
    errors.push({
      pointer: role$(i, "env", j),
      message: `environment variable ${env.name} is owned by berth for ${engine} and set from ${owned.controlledBy}: ${owned.reason}. Remove it from env, or take over the whole command with command`,
    });
  });
}

function checkFit(role: Role, i: number, errors: FieldError[]): void {
  if (role.elastic) return; // its own rule in checkElastic
  const { gpus } = role.resources;
  if (gpus === 0) return; // CPU-only role: degrees are not GPU counts
  const { tensor, pipeline, data, dataLocal } = role.parallelism;
  const held = gpus * role.size;
  const used = tensor * pipeline * data;
  if (held !== used) {
    const fixes = [
      used % role.size === 0 ? `set resources.gpus to ${used / role.size}` : "",
      held % (pipeline * data) === 0 ? `set parallelism.tensor to ${held / (pipeline * data)}` : "",
    ].filter(Boolean);
    errors.push({
      pointer: role$(i, "parallelism", "tensor"),
      message: `role "${role.name}" holds gpus × size = ${gpus} × ${role.size} = ${held} GPUs per instance, but tensor × pipeline × data = ${tensor} × ${pipeline} × ${data} = ${used}; make the two products equal (${fixes.length > 0 ? fixes.join(", or ") : "change gpus, size or the parallel degrees"})`,
    });
  }
  if (data > 1 && dataLocal * role.size !== data) {
    errors.push({
      pointer: role$(i, "parallelism", "dataLocal"),
      message: `role "${role.name}" spreads data = ${data} ranks over size = ${role.size} pods, so dataLocal × size must equal ${data}, but it is ${dataLocal} × ${role.size} = ${dataLocal * role.size}; ${
        data % role.size === 0 ? `set dataLocal to ${data / role.size}` : `choose data as a multiple of size`
      }`,
    });
  }
}

function checkScaling(spec: DeploymentSpec, errors: FieldError[]): void {
  const scaling = spec.scaling;
  if (!scaling) return;
  const roleNames = new Set(spec.roles.map((r) => r.name));
  const seen = new Set<string>();
  scaling.roles.forEach((entry, k) => {
    if (!roleNames.has(entry.name)) {
      errors.push({
        pointer: at("spec", "scaling", "roles", k, "name"),
        message: `scaling names role "${entry.name}", which the spec does not have; use one of ${[...roleNames].map((n) => `"${n}"`).join(", ")}`,
      });
    } else if (seen.has(entry.name)) {
      errors.push({ pointer: at("spec", "scaling", "roles", k, "name"), message: `role "${entry.name}" has scaling bounds twice; keep one entry` });
    }
    seen.add(entry.name);
    if (entry.minReplicas > entry.maxReplicas) {
      errors.push({
        pointer: at("spec", "scaling", "roles", k, "minReplicas"),
        message: `minReplicas ${entry.minReplicas} is above maxReplicas ${entry.maxReplicas}; lower minReplicas or raise maxReplicas`,
      });
    }
    // A role at zero has nobody to take a request: only the built-in router holds requests
    // (and reports them) until the autoscaler brings a replica back.
    if (entry.minReplicas === 0 && spec.router?.kind !== "builtin") {
      errors.push({
        pointer: at("spec", "scaling", "roles", k, "minReplicas"),
        message: `minReplicas 0 (scale to zero) needs the built-in router (spec.router.kind builtin), which holds requests while role "${entry.name}" has no replicas; add it or set minReplicas to 1`,
      });
    }
  });
  if (scaling.pdRatio) {
    const pd = indicesOf(spec, "prefill").length > 0 && indicesOf(spec, "decode").length > 0;
    if (!pd) {
      errors.push({ pointer: at("spec", "scaling", "pdRatio"), message: "pdRatio bounds prefill:decode replicas and needs prefill and decode roles; remove it" });
    } else if (scaling.pdRatio.min > scaling.pdRatio.max) {
      errors.push({
        pointer: at("spec", "scaling", "pdRatio", "min"),
        message: `pdRatio.min ${scaling.pdRatio.min} is above pdRatio.max ${scaling.pdRatio.max}; swap or adjust them`,
      });
    }
  }
}

/** A rollout must be able to move: with neither a surge nor an unavailable instance it never would. */
function checkRollout(spec: DeploymentSpec, errors: FieldError[]): void {
  spec.roles.forEach((role, i) => {
    if (role.rollout && role.rollout.maxSurge === 0 && role.rollout.maxUnavailable === 0) {
      errors.push({
        pointer: role$(i, "rollout"),
        message: "maxSurge and maxUnavailable are both 0, so a spec change could never replace an instance; set maxSurge to 1 (or maxUnavailable to 1)",
      });
    }
  });
}

function checkIdentity(spec: DeploymentSpec, previous: DeploymentSpec, errors: FieldError[]): void {
  if (spec.model.name !== previous.model.name) {
    errors.push({ pointer: at("spec", "model", "name"), message: `model.name was "${previous.model.name}"; it is ${IMMUTABLE}` });
  }
  if (spec.engine.name !== previous.engine.name) {
    errors.push({ pointer: at("spec", "engine", "name"), message: `engine.name was "${previous.engine.name}"; it is ${IMMUTABLE}` });
  }

  const before = new Map(previous.roles.map((r) => [r.name, r]));
  const after = new Set(spec.roles.map((r) => r.name));
  const added = spec.roles.filter((r) => !before.has(r.name)).map((r) => r.name);
  const removed = previous.roles.filter((r) => !after.has(r.name)).map((r) => r.name);
  if (added.length > 0 || removed.length > 0) {
    const change = [
      added.length > 0 ? `added ${added.map((n) => `"${n}"`).join(", ")}` : "",
      removed.length > 0 ? `removed ${removed.map((n) => `"${n}"`).join(", ")}` : "",
    ].filter(Boolean);
    errors.push({ pointer: at("spec", "roles"), message: `the set of roles is ${IMMUTABLE} (${change.join("; ")})` });
  }
  spec.roles.forEach((role, i) => {
    const old = before.get(role.name);
    if (!old) return;
    if (role.kind !== old.kind) {
      errors.push({ pointer: role$(i, "kind"), message: `role "${role.name}" was kind ${old.kind}; a role's kind is ${IMMUTABLE}` });
    }
    if (Boolean(role.elastic) !== Boolean(old.elastic)) {
      errors.push({
        pointer: role$(i, "elastic"),
        message: `role "${role.name}" ${old.elastic ? "was" : "was not"} elastic; elastic and its maxWidth are ${IMMUTABLE} (resize changes width)`,
      });
    } else if (role.elastic && old.elastic && role.elastic.maxWidth !== old.elastic.maxWidth) {
      errors.push({
        pointer: role$(i, "elastic", "maxWidth"),
        message: `elastic.maxWidth was ${old.elastic.maxWidth}; it is ${IMMUTABLE}`,
      });
    }
  });

  if (Boolean(spec.router) !== Boolean(previous.router)) {
    errors.push({
      pointer: at("spec", "router"),
      message: `the router cannot be ${previous.router ? "removed" : "added"}; the router kind is ${IMMUTABLE}`,
    });
  } else if (spec.router && previous.router && spec.router.kind !== previous.router.kind) {
    errors.push({ pointer: at("spec", "router", "kind"), message: `router.kind was ${previous.router.kind}; it is ${IMMUTABLE}` });
  }
}

function checkCapacity(
  spec: DeploymentSpec,
  cluster: NonNullable<AdmissionContext["cluster"]>,
  errors: FieldError[],
): void {
  const needed = countGpus(spec);
  if (needed > cluster.totalGpus) {
    errors.push({
      pointer: at("spec", "roles"),
      message: `the deployment needs ${needed} GPUs but the target cluster has ${cluster.totalGpus} in total; lower replicas or gpus, or choose a larger cluster`,
    });
  }
  if (!cluster.gpusByType) return;
  const byType = new Map<string, { first: number; needed: number }>();
  spec.roles.forEach((role, i) => {
    const type = role.resources.gpuType;
    if (!type) return;
    const entry = byType.get(type) ?? { first: i, needed: 0 };
    entry.needed += countRoleGpus(role);
    byType.set(type, entry);
  });
  for (const [type, { first, needed: forType }] of byType) {
    const available = cluster.gpusByType[type] ?? 0;
    if (forType > available) {
      errors.push({
        pointer: role$(first, "resources", "gpuType"),
        message: `the deployment needs ${forType} ${type} GPUs but the target cluster has ${available} in total; lower replicas or gpus, choose another gpuType, or drop gpuType to take any`,
      });
    }
  }
}
