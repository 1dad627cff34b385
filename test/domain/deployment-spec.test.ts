import { describe, expect, it } from "vitest";
import { z } from "zod";
import {
  applySpecDefaults,
  DeploymentLabels,
  DeploymentName,
  DeploymentSpec,
  DeploymentSpecInput,
  DeploymentStatus,
  pendingStatus,
  zodIssuesToFieldErrors,
  type DeploymentSpecInput as SpecInput,
} from "../../src/domain/deployment-spec.ts";
import { aDeployment } from "../fixtures/deployment-builder.ts";

const base = (): SpecInput => aDeployment().build().spec;

function defaulted(spec: unknown) {
  return applySpecDefaults(DeploymentSpecInput.parse(spec));
}

function specErrors(spec: unknown) {
  const parsed = DeploymentSpecInput.safeParse(spec);
  if (parsed.success) return [];
  return zodIssuesToFieldErrors(parsed.error.issues, "/spec");
}

describe("applySpecDefaults", () => {
  const roleWith = (role: object) => ({ ...base(), roles: [{ name: "server", ...role }] });

  it.each<[string, SpecInput, (s: DeploymentSpec) => unknown, unknown]>([
    ["role kind is server", base(), (s) => s.roles[0]!.kind, "server"],
    ["replicas is 1", base(), (s) => s.roles[0]!.replicas, 1],
    ["size is 1", base(), (s) => s.roles[0]!.size, 1],
    ["gpus is 1", base(), (s) => s.roles[0]!.resources.gpus, 1],
    ["gpuType stays absent (any type)", base(), (s) => "gpuType" in s.roles[0]!.resources, false],
    ["pipeline is 1", base(), (s) => s.roles[0]!.parallelism.pipeline, 1],
    ["data is 1", base(), (s) => s.roles[0]!.parallelism.data, 1],
    ["dataLocal is data ÷ size", roleWith({ size: 2, resources: { gpus: 2 }, parallelism: { data: 4 } }), (s) => s.roles[0]!.parallelism.dataLocal, 2],
    ["dataLocal is at least 1", roleWith({ size: 4, parallelism: { data: 2 } }), (s) => s.roles[0]!.parallelism.dataLocal, 1],
    ["rollout is surge 1, unavailable 0", base(), (s) => s.roles[0]!.rollout, { maxSurge: 1, maxUnavailable: 0 }],
    ["a partial rollout keeps what is given", roleWith({ rollout: { maxUnavailable: 2 } }), (s) => s.roles[0]!.rollout, { maxSurge: 1, maxUnavailable: 2 }],
    ["expert is false", base(), (s) => s.roles[0]!.parallelism.expert, false],
    ["externalDP is false", base(), (s) => s.roles[0]!.parallelism.externalDP, false],
    ["tensor is 1 for one GPU", base(), (s) => s.roles[0]!.parallelism.tensor, 1],
    ["a plain gpus: N role runs TP N", roleWith({ resources: { gpus: 4 } }), (s) => s.roles[0]!.parallelism.tensor, 4],
    ["tensor = gpus × size ÷ (pipeline × data)", roleWith({ size: 2, resources: { gpus: 8 }, parallelism: { pipeline: 2, data: 2 } }), (s) => s.roles[0]!.parallelism.tensor, 4],
    ["tensor is 1 when the GPUs do not divide evenly", roleWith({ resources: { gpus: 3 }, parallelism: { pipeline: 2 } }), (s) => s.roles[0]!.parallelism.tensor, 1],
    ["a given tensor is kept", roleWith({ resources: { gpus: 4 }, parallelism: { tensor: 2, data: 2 } }), (s) => s.roles[0]!.parallelism.tensor, 2],
    ["model.source is the Hugging Face repo of model.name at main", base(), (s) => s.model.source, { huggingFace: { repository: "Qwen/Qwen3-8B", revision: "main" } }],
    [
      "a Hugging Face source without revision gets main",
      { ...base(), model: { name: "m", source: { huggingFace: { repository: "org/m" } } } },
      (s) => s.model.source,
      { huggingFace: { repository: "org/m", revision: "main" } },
    ],
    ["a pvc source is kept as given", { ...base(), model: { name: "m", source: { pvc: { claimName: "weights" } } } }, (s) => s.model.source, { pvc: { claimName: "weights" } }],
    ["an absent router stays absent", base(), (s) => s.router, undefined],
    ["a given router gets builtin, round_robin, 1 replica", { ...base(), router: {} }, (s) => s.router, { kind: "builtin", policy: "round_robin", replicas: 1 }],
    ["a given router keeps its kind", { ...base(), router: { kind: "vllm-router" } }, (s) => s.router?.kind, "vllm-router"],
    ["kvTransfer is nixl over tcp for PD", aDeployment().pd().build().spec, (s) => s.kvTransfer, { connector: "nixl", protocol: "tcp" }],
    ["kvTransfer is nixl over tcp for EPD", aDeployment().epd().build().spec, (s) => s.kvTransfer, { connector: "nixl", protocol: "tcp" }],
    ["a partial kvTransfer is completed", aDeployment().pd().spec({ kvTransfer: { protocol: "rdma" } }).build().spec, (s) => s.kvTransfer, { connector: "nixl", protocol: "rdma" }],
    ["kvTransfer stays absent for a server role", base(), (s) => s.kvTransfer, undefined],
    ["extraArgs is []", base(), (s) => s.roles[0]!.extraArgs, []],
    ["env is []", base(), (s) => s.roles[0]!.env, []],
    ["command is []", base(), (s) => s.roles[0]!.command, []],
    ["terminationGracePeriodSeconds is 30", base(), (s) => s.roles[0]!.terminationGracePeriodSeconds, 30],
    ["absent scaling stays absent", base(), (s) => s.scaling, undefined],
    [
      "a given scaling gets every default",
      { ...base(), scaling: {} },
      (s) => s.scaling,
      {
        mode: "off",
        intervalSeconds: 15,
        roles: [],
        algorithm: { type: "queue_depth", targetPerReplica: 8, tolerance: 0.1 },
        scaleDownStabilizationSeconds: 300,
        retirement: { withdrawSeconds: 30, drainSeconds: 240, settleSeconds: 30 },
      },
    ],
    ["a scaling role's minReplicas is 1", { ...base(), scaling: { roles: [{ name: "server", maxReplicas: 4 }] } }, (s) => s.scaling?.roles, [{ name: "server", minReplicas: 1, maxReplicas: 4 }]],
    ["a partial retirement is completed", { ...base(), scaling: { retirement: { drainSeconds: 60 } } }, (s) => s.scaling?.retirement, { withdrawSeconds: 30, drainSeconds: 60, settleSeconds: 30 }],
    ["an sla algorithm is kept", { ...base(), scaling: { algorithm: { type: "sla", ttftMs: 500, itlMs: 50 } } }, (s) => s.scaling?.algorithm, { type: "sla", ttftMs: 500, itlMs: 50 }],
    ["an elastic role's gpus is tensor × pipeline", aDeployment().elastic(2, 8).tp(2).build().spec, (s) => s.roles[0]!.resources.gpus, 2],
    ["an elastic role without tensor runs TP 1 on 1 GPU", aDeployment().elastic(2, 8).build().spec, (s) => [s.roles[0]!.parallelism.tensor, s.roles[0]!.resources.gpus], [1, 1]],
    ["an elastic role's tensor follows its gpus", aDeployment().elastic(2, 8).gpus(4).build().spec, (s) => s.roles[0]!.parallelism.tensor, 4],
  ])("%s", (_label, spec, pick, expected) => {
    expect(pick(defaulted(spec))).toStrictEqual(expected);
  });

  const variants = {
    aggregated: aDeployment().build().spec,
    "pd tp2": aDeployment().pd().tp(2).replicas(3).build().spec,
    epd: aDeployment().epd().router("vllm-router").build().spec,
    elastic: aDeployment().elastic(2, 8).tp(2).build().spec,
    sglang: aDeployment().engine("sglang").gpus(8).build().spec,
    everything: {
      ...aDeployment().pd().build().spec,
      clusterId: "clu_0123456789abcdefghjk",
      model: { name: "m", source: { pvc: { claimName: "weights", path: "/models/m" } }, hfTokenSecret: { name: "hf", key: "token" } },
      scaling: { mode: "shadow", roles: [{ name: "decode", minReplicas: 0, maxReplicas: 8 }], pdRatio: { min: 0.5, max: 2 } },
    } satisfies SpecInput,
  };

  it.each(Object.entries(variants))("is idempotent and stays a valid input (%s)", (_name, spec) => {
    const once = defaulted(spec);
    expect(applySpecDefaults(once)).toStrictEqual(once);
    expect(DeploymentSpecInput.safeParse(once).success).toBe(true);
    expect(DeploymentSpec.safeParse(once).success).toBe(true);
    expect(JSON.parse(JSON.stringify(once))).toStrictEqual(once);
  });

  it("does not share arrays with its input", () => {
    const input = DeploymentSpecInput.parse(aDeployment().role({ name: "server", extraArgs: ["--x"] }).build().spec);
    const out = applySpecDefaults(input);
    out.roles[0]!.extraArgs.push("--y");
    expect(input.roles[0]!.extraArgs).toEqual(["--x"]);
  });

  it("refuses an input without defaults as a stored spec", () => {
    expect(DeploymentSpec.safeParse(base()).success).toBe(false);
  });
});

describe("zodIssuesToFieldErrors: unknown fields", () => {
  it("points at the unknown field itself and lists the allowed ones", () => {
    const errors = specErrors({ ...base(), colour: "blue" });
    expect(errors).toEqual([
      {
        pointer: "/spec/colour",
        message: 'unknown field "colour"; remove it (allowed fields: clusterId, model, engine, router, kvTransfer, roles, scaling)',
      },
    ]);
  });

  it.each([
    ["/spec/roles/0/colour", { ...base(), roles: [{ name: "server", colour: 1 }] }],
    ["/spec/roles/0/resources/colour", { ...base(), roles: [{ name: "server", resources: { colour: 1 } }] }],
    ["/spec/roles/0/env/0/colour", { ...base(), roles: [{ name: "server", env: [{ name: "A", value: "b", colour: 1 }] }] }],
    ["/spec/model/source/huggingFace/colour", { ...base(), model: { name: "m", source: { huggingFace: { repository: "r", colour: 1 } } } }],
    ["/spec/scaling/algorithm/colour", { ...base(), scaling: { algorithm: { type: "sla", ttftMs: 1, itlMs: 1, colour: 1 } } }],
    ["/spec/scaling/retirement/colour", { ...base(), scaling: { retirement: { colour: 1 } } }],
    ["/spec/a~1b~0c", { ...base(), "a/b~c": 1 }],
  ])("nested: %s", (pointer, spec) => {
    const errors = specErrors(spec);
    expect(errors.map((e) => e.pointer)).toEqual([pointer]);
    expect(errors[0]!.message).toMatch(/^unknown field ".+"; remove it \(allowed fields: .+\)$/);
  });

  it("reports one error per unknown key, with pointers from the body root when parsing a body", () => {
    const Body = z.strictObject({ name: DeploymentName, spec: DeploymentSpecInput });
    const parsed = Body.safeParse({ name: "qwen", spec: { ...base(), colour: 1, size: 2 } });
    expect(parsed.success).toBe(false);
    const errors = zodIssuesToFieldErrors(parsed.error!.issues);
    expect(errors.map((e) => e.pointer)).toEqual(["/spec/colour", "/spec/size"]);
  });
});

describe("zodIssuesToFieldErrors: bounds and types", () => {
  const roleWith = (role: object) => ({ ...base(), roles: [{ name: "server", ...role }] });

  it.each<[string, unknown, string, RegExp]>([
    ["replicas above 1024", roleWith({ replicas: 1025 }), "/spec/roles/0/replicas", /^spec\.roles\[0\]\.replicas must be at most 1024; lower replicas or split the deployment$/],
    ["negative replicas", roleWith({ replicas: -1 }), "/spec/roles/0/replicas", /must be at least 0/],
    ["fractional replicas", roleWith({ replicas: 1.5 }), "/spec/roles/0/replicas", /must be a whole number/],
    ["size above 64", roleWith({ size: 65 }), "/spec/roles/0/size", /must be at most 64; use fewer pods per instance/],
    ["size 0", roleWith({ size: 0 }), "/spec/roles/0/size", /must be at least 1/],
    ["gpus above 1024", roleWith({ resources: { gpus: 1025 } }), "/spec/roles/0/resources/gpus", /at most 1024; lower gpus/],
    ["tensor 0", roleWith({ parallelism: { tensor: 0 } }), "/spec/roles/0/parallelism/tensor", /at least 1/],
    ["grace period above a day", roleWith({ terminationGracePeriodSeconds: 86401 }), "/spec/roles/0/terminationGracePeriodSeconds", /at most 86400/],
    ["257 extraArgs", roleWith({ extraArgs: Array.from({ length: 257 }, () => "--x") }), "/spec/roles/0/extraArgs", /at most 256 items/],
    ["an extraArg over 4096 characters", roleWith({ extraArgs: ["x".repeat(4097)] }), "/spec/roles/0/extraArgs/0", /at most 4096 characters/],
    ["an env name with a dash", roleWith({ env: [{ name: "MY-VAR", value: "1" }] }), "/spec/roles/0/env/0/name", /must be an environment variable name/],
    ["an env item without value", roleWith({ env: [{ name: "A" }] }), "/spec/roles/0/env/0/value", /is required/],
    ["a cpu that is not a quantity", roleWith({ resources: { cpu: "8 cores" } }), "/spec/roles/0/resources/cpu", /Kubernetes quantity/],
    ["an unknown gpuType", roleWith({ resources: { gpuType: "h100" } }), "/spec/roles/0/resources/gpuType", /must be one of "nvidia-h100-80gb"/],
    ["an unknown role kind", roleWith({ kind: "worker" }), "/spec/roles/0/kind", /must be one of "server", "prefill", "decode", "encode"/],
    ["a role without name", { ...base(), roles: [{}] }, "/spec/roles/0/name", /^spec\.roles\[0\]\.name is required; add it$/],
    ["no roles", { ...base(), roles: [] }, "/spec/roles", /needs at least 1 role/],
    ["17 roles", { ...base(), roles: Array.from({ length: 17 }, (_, i) => ({ name: `r${i}` })) }, "/spec/roles", /at most 16 items; a deployment has at most 16 roles/],
    ["no model name", { ...base(), model: {} }, "/spec/model/name", /is required/],
    ["a model name over 256 characters", { ...base(), model: { name: "m".repeat(257) } }, "/spec/model/name", /at most 256 characters/],
    ["an unknown engine", { ...base(), engine: { name: "tgi", image: "x" } }, "/spec/engine/name", /must be one of "vllm", "sglang"/],
    ["no engine image", { ...base(), engine: { name: "vllm" } }, "/spec/engine/image", /is required/],
    ["roles that are not a list", { ...base(), roles: { name: "x" } }, "/spec/roles", /must be a list, not object/],
    ["two model sources", { ...base(), model: { name: "m", source: { pvc: { claimName: "w" }, uri: "s3://b/m" } } }, "/spec/model/source", /must be exactly one of/],
    ["a pvc source without claimName", { ...base(), model: { name: "m", source: { pvc: {} } } }, "/spec/model/source/pvc/claimName", /is required/],
    ["a uri without scheme", { ...base(), model: { name: "m", source: { uri: "bucket/m" } } }, "/spec/model/source/uri", /must be a URI with a scheme/],
    ["an hfTokenSecret with a bad name", { ...base(), model: { name: "m", hfTokenSecret: { name: "Bad_Name", key: "t" } } }, "/spec/model/hfTokenSecret/name", /Secret name/],
    ["router replicas above 16", { ...base(), router: { replicas: 17 } }, "/spec/router/replicas", /at most 16/],
    ["an unknown router policy", { ...base(), router: { policy: "random" } }, "/spec/router/policy", /must be one of "round_robin"/],
    ["an unknown algorithm type", { ...base(), scaling: { algorithm: { type: "magic" } } }, "/spec/scaling/algorithm/type", /must be one of "queue_depth", "sla"/],
    ["a tolerance above 1", { ...base(), scaling: { algorithm: { type: "queue_depth", tolerance: 2 } } }, "/spec/scaling/algorithm/tolerance", /at most 1/],
    ["a target of 0", { ...base(), scaling: { algorithm: { type: "queue_depth", targetPerReplica: 0 } } }, "/spec/scaling/algorithm/targetPerReplica", /must be greater than 0/],
    ["an sla without itlMs", { ...base(), scaling: { algorithm: { type: "sla", ttftMs: 500 } } }, "/spec/scaling/algorithm/itlMs", /is required/],
    ["an interval of 0", { ...base(), scaling: { intervalSeconds: 0 } }, "/spec/scaling/intervalSeconds", /at least 1/],
    ["a scaling role without maxReplicas", { ...base(), scaling: { roles: [{ name: "server" }] } }, "/spec/scaling/roles/0/maxReplicas", /is required/],
    ["a clusterId that is not a cluster id", { ...base(), clusterId: "dep_0123456789abcdefghjk" }, "/spec/clusterId", /must be a cluster id/],
  ])("%s", (_label, spec, pointer, message) => {
    const errors = specErrors(spec);
    expect(errors.map((e) => e.pointer)).toEqual([pointer]);
    expect(errors[0]!.message).toMatch(message);
  });

  it("reports every problem at once", () => {
    const errors = specErrors({ model: {}, engine: {}, roles: [{ name: "a", replicas: 5000, size: 100 }] });
    expect(errors.map((e) => e.pointer)).toEqual([
      "/spec/model/name",
      "/spec/engine/name",
      "/spec/engine/image",
      "/spec/roles/0/replicas",
      "/spec/roles/0/size",
    ]);
  });

  it("names the whole body when the value is not an object", () => {
    expect(specErrors(null)).toEqual([{ pointer: "/spec", message: "spec must be an object, not null" }]);
  });
});

describe("DeploymentName and DeploymentLabels", () => {
  it.each([
    ["qwen-chat", true],
    ["a", true],
    ["a".repeat(63), true],
    ["a".repeat(64), false],
    ["1qwen", false],
    ["Qwen", false],
    ["qwen-", false],
    ["qwen.chat", false],
    ["", false],
  ])("name %j valid: %s", (name, valid) => {
    expect(DeploymentName.safeParse(name).success).toBe(valid);
  });

  it.each([
    [{ team: "search", "berth.dev/tier": "gold", empty: "" }, []],
    [{ "Bad Key": "x" }, ["/labels/Bad Key"]],
    [{ [`${"a".repeat(64)}`]: "x" }, [`/labels/${"a".repeat(64)}`]],
    [{ "-prefix.io/x": "y" }, ["/labels/-prefix.io~1x"]],
    [{ ok: "not ok!" }, ["/labels/ok"]],
    [{ ok: "v".repeat(64) }, ["/labels/ok"]],
    [Object.fromEntries(Array.from({ length: 65 }, (_, i) => [`k${i}`, "v"])), ["/labels"]],
  ])("labels %j → %j", (labels, pointers) => {
    const parsed = DeploymentLabels.safeParse(labels);
    const errors = parsed.success ? [] : zodIssuesToFieldErrors(parsed.error.issues, "/labels");
    expect(errors.map((e) => e.pointer)).toEqual(pointers);
  });
});

describe("DeploymentStatus", () => {
  it("starts Pending with an Accepted condition", () => {
    const status = pendingStatus(new Date("2025-01-02T03:04:05.000Z"));
    expect(status).toStrictEqual({
      phase: "Pending",
      conditions: [
        {
          type: "Accepted",
          status: "True",
          reason: "Admitted",
          message: "spec admitted; waiting for an agent to take it",
          lastTransitionTime: "2025-01-02T03:04:05.000Z",
        },
      ],
    });
    expect(DeploymentStatus.safeParse(status).success).toBe(true);
  });

  it("accepts a full agent status with unobserved counts absent", () => {
    const status = {
      phase: "Degraded",
      observedGeneration: 3,
      endpoint: "http://127.0.0.5:8000",
      roles: [{ name: "decode", kind: "decode", desired: 2, ready: 1 }],
      conditions: [
        {
          type: "RolesReady",
          status: "False",
          reason: "InsufficientGPU",
          message: "needs 2 nvidia-h100-80gb, 1 free",
          observedGeneration: 3,
          lastTransitionTime: "2025-01-02T03:04:05Z",
        },
      ],
      scaling: { mode: "shadow", roles: [{ name: "decode", current: 2, recommended: 3, reason: "QueueDepth", signals: [] }] },
      replicas: [{ role: "decode", index: 0, state: "Ready" }],
      message: "1 of 2 decode instances ready",
    };
    expect(DeploymentStatus.parse(status)).toStrictEqual(status);
  });

  it.each<[string, unknown, string]>([
    ["an unknown phase", { phase: "Running" }, "/status/phase"],
    ["a negative count", { phase: "Ready", roles: [{ name: "a", kind: "server", ready: -1 }] }, "/status/roles/0/ready"],
    ["a reason that is not CamelCase", { phase: "Ready", conditions: [{ type: "Ready", status: "True", reason: "all good", message: "", lastTransitionTime: "2025-01-02T03:04:05Z" }] }, "/status/conditions/0/reason"],
    ["an unknown condition type", { phase: "Ready", conditions: [{ type: "Happy", status: "True", reason: "Yes", message: "", lastTransitionTime: "2025-01-02T03:04:05Z" }] }, "/status/conditions/0/type"],
    ["a transition time that is not ISO", { phase: "Ready", conditions: [{ type: "Ready", status: "True", reason: "Yes", message: "", lastTransitionTime: "yesterday" }] }, "/status/conditions/0/lastTransitionTime"],
    ["an endpoint that is not a URL", { phase: "Ready", endpoint: "router:8000" }, "/status/endpoint"],
    ["an unknown field", { phase: "Ready", colour: "green" }, "/status/colour"],
  ])("refuses %s", (_label, status, pointer) => {
    const parsed = DeploymentStatus.safeParse(status);
    expect(parsed.success).toBe(false);
    expect(zodIssuesToFieldErrors(parsed.error!.issues, "/status").map((e) => e.pointer)).toEqual([pointer]);
  });
});
