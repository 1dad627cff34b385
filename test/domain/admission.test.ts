import { describe, expect, it } from "vitest";
import { admitDeploymentSpec, countGpus, countRoleGpus, type AdmissionContext } from "../../src/domain/admission.ts";
import { applySpecDefaults, DeploymentSpecInput, type DeploymentSpec } from "../../src/domain/deployment-spec.ts";
import { aDeployment, type DeploymentBody } from "../fixtures/deployment-builder.ts";

function defaulted(body: DeploymentBody): DeploymentSpec {
  return applySpecDefaults(DeploymentSpecInput.parse(body.spec));
}

function admit(body: DeploymentBody, ctx: AdmissionContext = {}) {
  return admitDeploymentSpec(body.name, defaulted(body), ctx);
}

const previous = (body: DeploymentBody): AdmissionContext => ({ previous: defaulted(body) });
const cluster = (totalGpus: number, gpusByType?: Record<string, number>): AdmissionContext => ({ cluster: { totalGpus, gpusByType } });

describe("admitDeploymentSpec", () => {
  it.each<[string, DeploymentBody, AdmissionContext, string[]]>([
    // valid shapes
    ["admits one server role", aDeployment().build(), {}, []],
    ["admits PD with a router", aDeployment().pd().tp(2).build(), {}, []],
    ["admits EPD with a router", aDeployment().epd().build(), {}, []],
    ["admits SGLang PD behind sglang-gateway", aDeployment().engine("sglang").pd().router("sglang-gateway").build(), {}, []],
    ["admits elastic EP", aDeployment().elastic(2, 8).tp(2).build(), {}, []],
    ["admits external DP with a router", aDeployment().router().role({ name: "server", size: 4, parallelism: { data: 4, externalDP: true } }).build(), {}, []],
    ["admits multi-host TP × PP", aDeployment().role({ name: "server", size: 2, resources: { gpus: 8 }, parallelism: { tensor: 8, pipeline: 2 } }).build(), {}, []],
    ["admits multi-host DP", aDeployment().role({ name: "server", size: 2, resources: { gpus: 2 }, parallelism: { data: 4 } }).build(), {}, []],
    ["admits a CPU-only role", aDeployment().gpus(0).build(), {}, []],
    ["admits non-owned extra args and env", aDeployment().role({ name: "server", extraArgs: ["--max-model-len", "8192", "--enable-prefix-caching"], env: [{ name: "VLLM_LOGGING_LEVEL", value: "DEBUG" }] }).build(), {}, []],
    [
      "exempts a take-over role from owned keys and fit",
      aDeployment().role({ name: "server", command: ["sh", "-c", "vllm serve m"], extraArgs: ["--port", "9000"], resources: { gpus: 3 }, parallelism: { pipeline: 2 } }).build(),
      {},
      [],
    ],
    ["admits a scaled deployment", aDeployment().pd().spec({ scaling: { mode: "active", roles: [{ name: "decode", minReplicas: 1, maxReplicas: 8 }], pdRatio: { min: 0.25, max: 4 } } }).build(), {}, []],
    ["admits an update that changes only mutable fields", aDeployment().pd().replicas(4).build(), previous(aDeployment().pd().build()), []],
    ["admits an elastic resize (width only)", aDeployment().elastic(6, 8).build(), previous(aDeployment().elastic(2, 8).build()), []],
    ["admits a deployment that fits the cluster", aDeployment().pd().tp(2).replicas(2).build(), cluster(8), []],

    // names
    ["refuses a deployment name that is not DNS-1035", aDeployment().name("Qwen_Chat").build(), {}, ["/name"]],
    ["refuses a role name that is not DNS-1035", aDeployment().spec({ roles: [{ name: "Server" }] }).build(), {}, ["/spec/roles/0/name"]],
    ["refuses duplicate role names", aDeployment().router().spec({ roles: [{ name: "p", kind: "prefill" }, { name: "p", kind: "decode" }] }).build(), {}, ["/spec/roles/1/name"]],
    ["refuses pod names over 63 characters", aDeployment().name("a".repeat(40)).spec({ roles: [{ name: "b".repeat(20) }] }).build(), {}, ["/spec/roles/0/name"]],
    ["counts the largest replica index", aDeployment().name("a".repeat(50)).replicas(100).build(), {}, ["/spec/roles/0/name"]],
    ["counts the autoscaler's maxReplicas", aDeployment().name("a".repeat(50)).spec({ scaling: { roles: [{ name: "server", maxReplicas: 100 }] } }).build(), {}, ["/spec/roles/0/name"]],
    ["counts the largest member index", aDeployment().name("a".repeat(50)).role({ name: "server", size: 11, parallelism: { tensor: 11 } }).build(), {}, ["/spec/roles/0/name"]],
    ["counts an elastic role up to maxWidth", aDeployment().name("a".repeat(49)).elastic(2, 100).build(), {}, ["/spec/roles/0/name"]],
    ["admits a pod name of exactly 63 characters", aDeployment().name("a".repeat(50)).build(), {}, []],

    // shape
    ["refuses a server beside other roles", aDeployment().router().spec({ roles: [{ name: "server" }, { name: "prefill", kind: "prefill" }, { name: "decode", kind: "decode" }] }).build(), {}, ["/spec/roles/0/kind"]],
    ["refuses two server roles", aDeployment().spec({ roles: [{ name: "a" }, { name: "b" }] }).build(), {}, ["/spec/roles/1/kind"]],
    ["refuses a second prefill role", aDeployment().pd().role({ name: "prefill-b", kind: "prefill" }).build(), {}, ["/spec/roles/2/kind"]],
    ["refuses prefill without decode", aDeployment().router().spec({ roles: [{ name: "prefill", kind: "prefill" }] }).build(), {}, ["/spec/roles/0/kind"]],
    ["refuses decode without prefill", aDeployment().router().spec({ roles: [{ name: "decode", kind: "decode" }] }).build(), {}, ["/spec/roles/0/kind"]],
    ["refuses encode without prefill and decode", aDeployment().router().spec({ roles: [{ name: "encode", kind: "encode" }] }).build(), {}, ["/spec/roles/0/kind"]],
    ["refuses SGLang EPD (its encoder's /encode exchange is not run here)", aDeployment().engine("sglang").epd().build(), {}, ["/spec/roles/0/kind"]],
    ["admits vLLM EPD", aDeployment().epd().build(), {}, []],
    ["refuses kvTransfer without prefill/decode", aDeployment().spec({ kvTransfer: { connector: "nixl" } }).build(), {}, ["/spec/kvTransfer"]],

    // router
    ["refuses PD without a router", aDeployment().pd().withoutRouter().build(), {}, ["/spec/router"]],
    ["refuses EPD without a router", aDeployment().epd().withoutRouter().build(), {}, ["/spec/router"]],
    ["refuses external DP without a router", aDeployment().role({ name: "server", size: 2, parallelism: { data: 2, externalDP: true } }).build(), {}, ["/spec/router"]],
    ["refuses a router that cannot speak the engine's PD protocol", aDeployment().engine("sglang").pd().router("vllm-router").build(), {}, ["/spec/router/kind"]],

    // elastic
    ["refuses elastic on SGLang", aDeployment().engine("sglang").elastic(2, 8).build(), {}, ["/spec/roles/0/elastic"]],
    ["refuses elastic beside another role", aDeployment().pd().role({ name: "prefill", elastic: { width: 2, maxWidth: 4 } }).build(), {}, ["/spec/roles/0/elastic"]],
    ["refuses an elastic width below 2", aDeployment().elastic(1, 8).build(), {}, ["/spec/roles/0/elastic/width"]],
    ["refuses an elastic width above maxWidth", aDeployment().elastic(9, 8).build(), {}, ["/spec/roles/0/elastic/width"]],
    ["refuses elastic with pipeline parallelism", aDeployment().elastic(2, 8).role({ name: "experts", parallelism: { pipeline: 2 } }).build(), {}, ["/spec/roles/0/parallelism/pipeline"]],
    ["refuses elastic with external DP", aDeployment().elastic(2, 8).role({ name: "experts", parallelism: { externalDP: true } }).build(), {}, ["/spec/roles/0/parallelism/externalDP"]],
    ["refuses elastic with size above 1", aDeployment().elastic(2, 8).role({ name: "experts", size: 2 }).build(), {}, ["/spec/roles/0/size"]],
    ["refuses elastic with a command", aDeployment().elastic(2, 8).role({ name: "experts", command: ["vllm", "serve"] }).build(), {}, ["/spec/roles/0/command"]],
    ["refuses elastic gpus other than tensor × pipeline", aDeployment().elastic(2, 8).role({ name: "experts", resources: { gpus: 4 }, parallelism: { tensor: 2 } }).build(), {}, ["/spec/roles/0/resources/gpus"]],

    // owned keys
    ["refuses an owned short flag", aDeployment().role({ name: "server", extraArgs: ["--max-model-len", "4096", "-tp", "2"] }).build(), {}, ["/spec/roles/0/extraArgs/2"]],
    ["refuses an owned flag with =value", aDeployment().role({ name: "server", extraArgs: ["--port=9000"] }).build(), {}, ["/spec/roles/0/extraArgs/0"]],
    ["refuses a dotted kv-transfer sub-key", aDeployment().pd().role({ name: "decode", extraArgs: ["--kv-transfer-config.kv_role", "kv_both"] }).build(), {}, ["/spec/roles/1/extraArgs/0"]],
    ["refuses an owned SGLang flag", aDeployment().engine("sglang").role({ name: "server", extraArgs: ["--enable-metrics", "--tp-size", "2"] }).build(), {}, ["/spec/roles/0/extraArgs/0", "/spec/roles/0/extraArgs/1"]],
    ["refuses an owned env var", aDeployment().role({ name: "server", env: [{ name: "A", value: "1" }, { name: "VLLM_NIXL_SIDE_CHANNEL_HOST", value: "x" }] }).build(), {}, ["/spec/roles/0/env/1"]],
    ["refuses a BERTH_ env var", aDeployment().role({ name: "server", env: [{ name: "BERTH_MEMBER_INDEX", value: "0" }] }).build(), {}, ["/spec/roles/0/env/0"]],

    // fit
    ["refuses more tensor parallelism than GPUs", aDeployment().role({ name: "server", resources: { gpus: 2 }, parallelism: { tensor: 4 } }).build(), {}, ["/spec/roles/0/parallelism/tensor"]],
    ["refuses GPUs the default tensor cannot divide", aDeployment().role({ name: "server", resources: { gpus: 3 }, parallelism: { pipeline: 2 } }).build(), {}, ["/spec/roles/0/parallelism/tensor"]],
    ["refuses dataLocal × size other than data", aDeployment().role({ name: "server", size: 2, resources: { gpus: 2 }, parallelism: { data: 4, dataLocal: 1 } }).build(), {}, ["/spec/roles/0/parallelism/dataLocal"]],

    // scaling
    ["refuses scaling bounds for an unknown role", aDeployment().spec({ scaling: { roles: [{ name: "decode", maxReplicas: 4 }] } }).build(), {}, ["/spec/scaling/roles/0/name"]],
    ["refuses scaling bounds given twice", aDeployment().spec({ scaling: { roles: [{ name: "server", maxReplicas: 4 }, { name: "server", maxReplicas: 5 }] } }).build(), {}, ["/spec/scaling/roles/1/name"]],
    ["refuses minReplicas above maxReplicas", aDeployment().spec({ scaling: { roles: [{ name: "server", minReplicas: 5, maxReplicas: 4 }] } }).build(), {}, ["/spec/scaling/roles/0/minReplicas"]],
    ["refuses minReplicas 0 without the builtin router", aDeployment().spec({ scaling: { roles: [{ name: "server", minReplicas: 0, maxReplicas: 4 }] } }).build(), {}, ["/spec/scaling/roles/0/minReplicas"]],
    ["admits minReplicas 0 with the builtin router", aDeployment().spec({ router: { kind: "builtin" }, scaling: { roles: [{ name: "server", minReplicas: 0, maxReplicas: 4 }] } }).build(), {}, []],
    ["refuses pdRatio without PD", aDeployment().spec({ scaling: { pdRatio: { min: 1, max: 2 } } }).build(), {}, ["/spec/scaling/pdRatio"]],
    ["refuses pdRatio min above max", aDeployment().pd().spec({ scaling: { pdRatio: { min: 3, max: 2 } } }).build(), {}, ["/spec/scaling/pdRatio/min"]],

    // rollout
    ["admits a rollout of one at a time without a surge", aDeployment().role({ name: "server", rollout: { maxSurge: 0, maxUnavailable: 1 } }).build(), {}, []],
    ["refuses a rollout that could never move (surge 0, unavailable 0)", aDeployment().role({ name: "server", rollout: { maxSurge: 0, maxUnavailable: 0 } }).build(), {}, ["/spec/roles/0/rollout"]],
    ["counts the surge indexes in the pod-name length", aDeployment().name("a".repeat(50)).role({ name: "server", replicas: 10, rollout: { maxSurge: 1 } }).build(), {}, ["/spec/roles/0/name"]],

    // identity fields on update
    ["refuses a new model name", aDeployment().spec({ model: { name: "Qwen/Qwen3-32B" } }).build(), previous(aDeployment().build()), ["/spec/model/name"]],
    ["refuses a new engine", aDeployment().engine("sglang").build(), previous(aDeployment().build()), ["/spec/engine/name"]],
    ["refuses a changed role set", aDeployment().spec({ roles: [{ name: "main" }] }).build(), previous(aDeployment().build()), ["/spec/roles"]],
    [
      "refuses changed role kinds",
      aDeployment().router().spec({ roles: [{ name: "a", kind: "decode" }, { name: "b", kind: "prefill" }] }).build(),
      previous(aDeployment().router().spec({ roles: [{ name: "a", kind: "prefill" }, { name: "b", kind: "decode" }] }).build()),
      ["/spec/roles/0/kind", "/spec/roles/1/kind"],
    ],
    ["refuses adding a router", aDeployment().router().build(), previous(aDeployment().build()), ["/spec/router"]],
    ["refuses removing a router", aDeployment().build(), previous(aDeployment().router().build()), ["/spec/router"]],
    ["refuses a new router kind", aDeployment().pd().router("vllm-router").build(), previous(aDeployment().pd().build()), ["/spec/router/kind"]],
    ["refuses a new elastic maxWidth", aDeployment().elastic(2, 16).build(), previous(aDeployment().elastic(2, 8).build()), ["/spec/roles/0/elastic/maxWidth"]],
    ["refuses making a role elastic", aDeployment().elastic(2, 8).spec({ roles: [{ name: "server", elastic: { width: 2, maxWidth: 8 } }] }).build(), previous(aDeployment().build()), ["/spec/roles/0/elastic"]],

    // capacity
    ["refuses more GPUs than the cluster has", aDeployment().tp(2).replicas(4).build(), cluster(4), ["/spec/roles"]],
    ["refuses more GPUs of a type than the cluster has", aDeployment().role({ name: "server", resources: { gpus: 2, gpuType: "nvidia-h100-80gb" } }).build(), cluster(16, { "nvidia-h100-80gb": 1, "nvidia-l4-24gb": 15 }), ["/spec/roles/0/resources/gpuType"]],
    ["counts an elastic role at its current width", aDeployment().elastic(4, 8).build(), cluster(3), ["/spec/roles"]],
    ["admits an elastic role whose width fits though maxWidth would not", aDeployment().elastic(4, 8).build(), cluster(4), []],
  ])("%s", (_label, body, ctx, pointers) => {
    const errors = admit(body, ctx);
    expect(errors.map((e) => e.pointer)).toEqual(pointers);
    for (const error of errors) expect(error.message.length).toBeGreaterThan(20);
  });

  it("names the flag and the field that controls it", () => {
    const [error] = admit(aDeployment().role({ name: "server", extraArgs: ["-tp", "2"] }).build());
    expect(error!.message).toContain("-tp (--tensor-parallel-size)");
    expect(error!.message).toContain("spec.roles[].parallelism.tensor");
  });

  it("shows both products and the fix when the GPUs do not fit", () => {
    const [error] = admit(aDeployment().role({ name: "server", resources: { gpus: 2 }, parallelism: { tensor: 4 } }).build());
    expect(error!.message).toBe(
      'role "server" holds gpus × size = 2 × 1 = 2 GPUs per instance, but tensor × pipeline × data = 4 × 1 × 1 = 4; make the two products equal (set resources.gpus to 4, or set parallelism.tensor to 2)',
    );
  });

  it("says how far over the name limit a pod name is", () => {
    const [error] = admit(aDeployment().name("a".repeat(40)).spec({ roles: [{ name: "b".repeat(20) }] }).build());
    expect(error!.message).toContain("67 characters, 4 over the 63 limit");
    expect(error!.message).toContain("shorten the deployment name (40) or the role name (20) by 4");
  });

  it("says immutable fields need a new deployment", () => {
    const [error] = admit(aDeployment().engine("sglang").build(), previous(aDeployment().build()));
    expect(error!.message).toMatch(/immutable: create a new deployment instead$/);
  });

  it("reports every problem at once", () => {
    const body = aDeployment()
      .name("Bad")
      .pd()
      .withoutRouter()
      .role({ name: "decode", extraArgs: ["--port", "1"], resources: { gpus: 2 }, parallelism: { tensor: 4 } })
      .build();
    expect(admit(body).map((e) => e.pointer)).toEqual([
      "/name",
      "/spec/router",
      "/spec/roles/1/extraArgs/0",
      "/spec/roles/1/parallelism/tensor",
    ]);
  });
});

describe("countGpus", () => {
  it.each<[string, DeploymentBody, number]>([
    ["one GPU by default", aDeployment().build(), 1],
    ["replicas × size × gpus", aDeployment().role({ name: "server", replicas: 3, size: 2, resources: { gpus: 4 }, parallelism: { tensor: 8 } }).build(), 24],
    ["every role", aDeployment().pd().tp(2).replicas(2).build(), 8],
    ["an elastic role at its width", aDeployment().elastic(4, 8).tp(2).build(), 8],
    ["a CPU-only role as 0", aDeployment().gpus(0).build(), 0],
  ])("%s", (_label, body, expected) => {
    expect(countGpus(defaulted(body))).toBe(expected);
  });

  it("sums countRoleGpus", () => {
    const spec = defaulted(aDeployment().epd().tp(2).build());
    expect(spec.roles.map(countRoleGpus)).toEqual([2, 2, 2]);
  });
});
