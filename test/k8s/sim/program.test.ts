// What a simulated container runs, its environment, and the pod status the kubelet reports (pure).
import { describe, expect, it } from "vitest";
import { renderDeployment } from "../../../k8s/render/index.ts";
import { podConditions, podPhase, type ContainerStatus } from "../../../k8s/sim/pod-status.ts";
import {
  classifyImage,
  EnvError,
  expandReferences,
  findEngineArgv,
  resolveEnv,
  resolveProgram,
  rewriteMountedPaths,
  shellWords,
  type EnvContext,
  type Programs,
} from "../../../k8s/sim/program.ts";
import { humanDuration, podStatusText } from "../../../k8s/sim/tables.ts";
import { aDeployment } from "../../fixtures/deployment-builder.ts";
import { renderInput, ROUTER_IMAGE } from "./support.ts";

const PROGRAMS: Programs = { engineCommand: ["node", "berth.js", "sim-engine"], routerCommand: ["node", "berth.js", "router"], routerImage: ROUTER_IMAGE };
const resolve = (image: string, command: string[], args: string[] = [], env: Record<string, string> = {}) =>
  resolveProgram({ image, command, args, env: new Map(Object.entries(env)), programs: PROGRAMS, engineFlags: ["--gpu-type", "nvidia-h100-80gb"], nodePath: "node" });

describe("images", () => {
  it.each([
    ["vllm/vllm-openai:v0.11.0", "engine"],
    ["docker.io/vllm/vllm-openai:latest", "engine"],
    ["lmsysorg/sglang:v0.5.4", "engine"],
    ["lmsysorg/sglang:latest-cu126", "engine"],
    [ROUTER_IMAGE, "router"],
    ["nginx:1.27", "unknown"],
    ["lightseekorg/smg:v1.13.0", "unknown"],
    ["vllm/vllm-router:v0.1.17", "unknown"],
  ])("%s is %s", (image, kind) => {
    expect(classifyImage(image, ROUTER_IMAGE)).toBe(kind);
  });
});

describe("$(VAR) expansion", () => {
  const env = new Map([
    ["BERTH_POD_IP", "127.0.1.7"],
    ["EMPTY", ""],
  ]);
  it.each([
    ["--host=$(BERTH_POD_IP)", "--host=127.0.1.7"],
    ["$(BERTH_POD_IP):$(MISSING)", "127.0.1.7:$(MISSING)"],
    ["$$(BERTH_POD_IP)", "$(BERTH_POD_IP)"],
    ["cost $5 and $$", "cost $5 and $"],
    ["[$(EMPTY)]", "[]"],
    ["$(unclosed", "$(unclosed"],
  ])("%s → %s", (input, output) => {
    expect(expandReferences(input, (name) => env.get(name))).toBe(output);
  });
});

describe("engine command lines", () => {
  const elastic = renderDeployment(renderInput(aDeployment().name("dsv2").elastic(2, 8).tp(2).build())).pods;

  it("finds `vllm serve` after the elastic leader's `sh -c … exec \"$@\"` wrapper", () => {
    const leader = elastic[0]!.spec!.containers[0]!;
    const program = resolve(leader.image!, leader.command!, leader.args!);
    expect(program.kind).toBe("engine");
    if (program.kind !== "engine") return;
    expect(program.engineArgv.slice(0, 3)).toEqual(["vllm", "serve", "Qwen/Qwen3-8B"]);
    expect(program.argv.slice(0, 6)).toEqual(["node", "berth.js", "sim-engine", "--gpu-type", "nvidia-h100-80gb", "--"]);
    expect(program.engineArgv).toContain("--enable-elastic-ep");
  });

  it("runs a Ray worker rank as an idle process", () => {
    const worker = elastic[1]!.spec!.containers[0]!;
    const program = resolve(worker.image!, worker.command!, worker.args!);
    expect(program.kind).toBe("idle");
    expect(program.kind === "idle" && program.argv.slice(3)).toEqual(["ray", "start", ...worker.args!]);
  });

  it.each([
    [["python3", "-m", "sglang.launch_server", "--model-path", "m"], ["python3", "-m", "sglang.launch_server", "--model-path", "m"]],
    [["/usr/bin/python3", "-m", "vllm.entrypoints.openai.api_server", "--model", "m"], ["/usr/bin/python3", "-m", "vllm.entrypoints.openai.api_server", "--model", "m"]],
    [["/bin/sh", "-c", "echo hi && exec vllm serve m --port $PORT; echo bye"], ["vllm", "serve", "m", "--port", "9000"]],
    [["bash", "-c", 'vllm serve "my model" --served-model-name \'a b\''], ["vllm", "serve", "my model", "--served-model-name", "a b"]],
    [["/bin/sh", "-c", "exec /opt/serve.sh"], undefined],
  ])("%j → %j", (argv, expected) => {
    expect(findEngineArgv(argv, (name) => (name === "PORT" ? "9000" : undefined))).toEqual(expected);
  });

  it("puts the vLLM image's entrypoint before bare args", () => {
    const program = resolve("vllm/vllm-openai:v0.11.0", [], ["--model", "m"]);
    expect(program.kind === "engine" && program.engineArgv).toEqual(["python3", "-m", "vllm.entrypoints.openai.api_server", "--model", "m"]);
  });

  it("runs any other command in an engine image as given (it may crash-loop, as it would in a container)", () => {
    expect(resolve("vllm/vllm-openai:v0.11.0", ["/bin/sh", "-c", "exit 3"])).toEqual({ kind: "host", argv: ["/bin/sh", "-c", "exit 3"] });
  });

  it("runs `berth router` through the configured router command", () => {
    expect(resolve(ROUTER_IMAGE, ["berth", "router"], ["--port", "8080"])).toEqual({ kind: "router", argv: ["node", "berth.js", "router", "--port", "8080"] });
    expect(resolve("nginx", ["nginx"])).toEqual({ kind: "unknown-image" });
  });

  it("runs the berth image's other commands (`berth agent`) through berthCommand when the node has one, else as given", () => {
    const withCli = { ...PROGRAMS, berthCommand: ["node", "berth.js"] };
    const run = (programs: Programs) =>
      resolveProgram({ image: ROUTER_IMAGE, command: ["berth", "agent", "--leader-elect"], args: [], env: new Map(), programs, nodePath: "node" });
    expect(run(withCli)).toEqual({ kind: "host", argv: ["node", "berth.js", "agent", "--leader-elect"] });
    expect(run(PROGRAMS)).toEqual({ kind: "host", argv: ["berth", "agent", "--leader-elect"] });
  });

  it("splits shell words with quotes, variables and operators", () => {
    expect(shellWords(`a "b $X" 'c $X' \${X}d&&e;f`, (n) => (n === "X" ? "x" : undefined))).toEqual(["a", "b x", "c $X", "xd", "&&", "e", ";", "f"]);
  });
});

describe("container environment", () => {
  const ctx: EnvContext = {
    field: (path) => ({ "status.podIP": "127.0.1.9", "metadata.name": "p", "metadata.namespace": "ns" })[path],
    resource: (name) => (name === "limits.cpu" ? "4" : undefined),
    secret: (name) => (name === "hf" ? { token: "hf_x" } : undefined),
    configMap: (name) => (name === "cfg" ? { MODE: "fast", LEVEL: "2" } : undefined),
  };

  it("builds envFrom, fieldRef, secretKeyRef and `$(VAR)` values in order", () => {
    const env = resolveEnv(
      [
        { name: "BERTH_POD_IP", valueFrom: { fieldRef: { fieldPath: "status.podIP" } } },
        { name: "ADDR", value: "$(BERTH_POD_IP):8000" },
        { name: "HF_TOKEN", valueFrom: { secretKeyRef: { name: "hf", key: "token" } } },
        { name: "CPUS", valueFrom: { resourceFieldRef: { resource: "limits.cpu" } } },
        { name: "OPT", valueFrom: { secretKeyRef: { name: "nope", key: "k", optional: true } } },
      ],
      [{ configMapRef: { name: "cfg" }, prefix: "APP_" }],
      ctx,
    );
    expect(Object.fromEntries(env)).toEqual({ APP_MODE: "fast", APP_LEVEL: "2", BERTH_POD_IP: "127.0.1.9", ADDR: "127.0.1.9:8000", HF_TOKEN: "hf_x", CPUS: "4" });
  });

  it.each([
    [[{ name: "T", valueFrom: { secretKeyRef: { name: "missing", key: "token" } } }], 'secret "missing" not found'],
    [[{ name: "T", valueFrom: { secretKeyRef: { name: "hf", key: "other" } } }], "couldn't find key other in Secret hf"],
  ])("a missing source is a CreateContainerConfigError: %j", (env, message) => {
    expect(() => resolveEnv(env, [], ctx)).toThrow(EnvError);
    expect(() => resolveEnv(env, [], ctx)).toThrow(message);
  });

  it("points paths under a mount at the kubelet's copy of the volume", () => {
    const mounts = new Map([["/etc/berth/router-admin", "/tmp/pod/volumes/admin-token"]]);
    expect(rewriteMountedPaths("/etc/berth/router-admin/token", mounts)).toBe("/tmp/pod/volumes/admin-token/token");
    expect(rewriteMountedPaths("--admin-token-file=/etc/berth/router-admin/token", mounts)).toBe("--admin-token-file=/tmp/pod/volumes/admin-token/token");
    expect(rewriteMountedPaths("/etc/berth/router-admin-other", mounts)).toBe("/etc/berth/router-admin-other");
  });
});

describe("pod status", () => {
  const status = (state: ContainerStatus["state"], lastState: ContainerStatus["lastState"] = {}, ready = false): ContainerStatus => ({
    name: "c",
    state,
    lastState,
    ready,
    started: ready,
    restartCount: 0,
    image: "i",
    imageID: "",
  });
  const crashed = { terminated: { exitCode: 3, reason: "Error", startedAt: "", finishedAt: "" } };

  it.each<[string, string, ContainerStatus[], boolean, string]>([
    ["waiting to pull", "Always", [status({ waiting: { reason: "ImagePullBackOff" } })], false, "Pending"],
    ["running", "Always", [status({ running: { startedAt: "" } })], false, "Running"],
    ["crash-looping after a run", "Always", [status({ waiting: { reason: "CrashLoopBackOff" } }, crashed)], false, "Running"],
    ["exited 0, Never", "Never", [status({ terminated: { exitCode: 0, reason: "Completed", startedAt: "", finishedAt: "" } })], false, "Succeeded"],
    ["exited 3, Never", "Never", [status(crashed)], false, "Failed"],
    ["stopped by a delete", "Always", [status(crashed)], true, "Failed"],
  ])("%s (%s) → %s", (_name, policy, statuses, stopping, phase) => {
    expect(podPhase(policy, statuses, stopping)).toBe(phase);
  });

  it("keeps a condition's lastTransitionTime while its status holds", () => {
    const first = podConditions({ sandboxReady: true, statuses: [status({ running: { startedAt: "" } })], now: "t1" });
    expect(first.find((c) => c.type === "Ready")).toMatchObject({ status: "False", reason: "ContainersNotReady", message: "containers with unready status: [c]" });
    const second = podConditions({ sandboxReady: true, statuses: [status({ running: { startedAt: "" } }, {}, true)], now: "t2" }, first);
    expect(second.find((c) => c.type === "Ready")).toMatchObject({ status: "True", lastTransitionTime: "t2" });
    expect(second.find((c) => c.type === "Initialized")).toMatchObject({ lastTransitionTime: "t1" });
  });

  it("prints STATUS and ages as kubectl does", () => {
    expect(podStatusText({ metadata: {}, spec: { containers: [{}] }, status: { phase: "Running", containerStatuses: [{ state: { waiting: { reason: "CrashLoopBackOff" } }, restartCount: 4 }] } })).toMatchObject({
      status: "CrashLoopBackOff",
      restarts: 4,
      ready: 0,
      total: 1,
    });
    expect(podStatusText({ metadata: { deletionTimestamp: "x" }, spec: { containers: [{}] }, status: { phase: "Running" } }).status).toBe("Terminating");
    expect([5_000, 150_000, 600_000, 4 * 3_600_000 + 60_000, 50 * 3_600_000, 3 * 86_400_000].map(humanDuration)).toEqual(["5s", "2m30s", "10m", "4h1m", "2d2h", "3d"]);
  });
});
