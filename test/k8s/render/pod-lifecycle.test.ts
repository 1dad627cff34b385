// Probes, the preStop drain hook, GPU scheduling, volumes and the take-over tier, plus the
// drain script itself run with python3 against a fake engine's /metrics on loopback.
import { spawn, spawnSync } from "node:child_process";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import { drainHook, GPU_TYPE_LABEL, renderDeployment, renderMemberPod } from "../../../k8s/render/index.ts";
import { DRAIN_SCRIPT } from "../../../k8s/render/drain-hook.ts";
import { shape, SHAPES, withSpec } from "./support.ts";

const engine = (file: string, role = "server", member = 0) => renderMemberPod(shape(file), role, 0, member).spec!.containers[0]!;

describe("probes", () => {
  it.each(SHAPES.map((s) => [s.file, s] as const))("%s: SGLang probe timeouts are ≥ 5 s; every probe targets /health or the http port", (_file, { input }) => {
    for (const pod of renderDeployment(input).pods) {
      const container = pod.spec!.containers[0]!;
      for (const probe of [container.startupProbe, container.readinessProbe, container.livenessProbe]) {
        if (!probe) continue;
        if (input.deployment.spec.engine.name === "sglang") expect(probe.timeoutSeconds).toBeGreaterThanOrEqual(5);
        expect(probe.httpGet?.path ?? "tcp").toMatch(/^\/health$|^tcp$/);
        expect((probe.httpGet ?? probe.tcpSocket)!.port).toBe("http");
      }
    }
  });

  it("serving pods get startup, readiness and liveness probes; followers and Ray workers none", () => {
    const leader = engine("vllm-dp4-local2-multihost");
    // 30 minutes to start, polled every 2 s so a new replica takes traffic soon after it answers.
    expect([leader.startupProbe?.periodSeconds, leader.startupProbe?.failureThreshold]).toEqual([2, 900]);
    expect(leader.readinessProbe?.httpGet?.path).toBe("/health");
    expect(leader.livenessProbe?.httpGet?.path).toBe("/health");
    for (const follower of [engine("vllm-dp4-local2-multihost", "server", 1), engine("vllm-elastic-ep-w2", "experts", 1), engine("sglang-multihost-nnodes2", "server", 1)]) {
      expect(follower.startupProbe ?? follower.readinessProbe ?? follower.livenessProbe).toBeUndefined();
      expect(follower.lifecycle).toBeUndefined();
    }
  });

  it("the elastic leader's liveness and readiness are TCP connects after startup: /health answers 503 for a whole resize", () => {
    const leader = engine("vllm-elastic-ep-w2", "experts");
    expect(leader.livenessProbe).toEqual({ tcpSocket: { port: "http" }, timeoutSeconds: 5, periodSeconds: 30, failureThreshold: 3 });
    // A resize can outlast readiness's 30 s: withdrawing the leader then would turn the 503s the router
    // retries into refusals. Startup still waits for /health to answer 200 once.
    expect(leader.readinessProbe).toEqual({ tcpSocket: { port: "http" }, timeoutSeconds: 5, periodSeconds: 10, failureThreshold: 3, successThreshold: 1 });
    expect(leader.startupProbe?.httpGet?.path).toBe("/health");
  });

  it("SGLang uses 10 s timeouts and a more patient liveness; vLLM 5 s", () => {
    expect(engine("sglang-aggregated").livenessProbe).toMatchObject({ timeoutSeconds: 10, failureThreshold: 5 });
    expect(engine("vllm-aggregated-tp2-x2").readinessProbe).toMatchObject({ timeoutSeconds: 5 });
  });
});

describe("take-over tier", () => {
  it("runs the user's command as is, unmanaged: no args, no probes, no drain hook", () => {
    const pod = renderMemberPod(shape("command-takeover"), "server", 0, 0);
    const container = pod.spec!.containers[0]!;
    expect(container.command).toEqual(["/bin/sh", "-c", "exec /opt/serve.sh --rank $BERTH_MEMBER_INDEX"]);
    expect(container.args).toBeUndefined();
    expect(container.startupProbe ?? container.readinessProbe ?? container.livenessProbe ?? container.lifecycle).toBeUndefined();
    expect(pod.metadata!.labels!["berth.dev/unmanaged"]).toBe("true");
    expect(pod.metadata!.annotations!["berth.dev/unmanaged"]).toBe("true");
    expect(pod.spec!.terminationGracePeriodSeconds).toBe(60);
  });

  it("extraArgs are not appended to a take-over command", () => {
    const input = withSpec(shape("command-takeover"), (s) => void (s.roles[0]!.extraArgs = ["--seed", "1"]));
    expect(renderMemberPod(input, "server", 0, 0).spec!.containers[0]!.args).toBeUndefined();
  });
});

describe("drain hook", () => {
  it("polls the engine's own gauges, on its port, within the grace period minus a margin", () => {
    expect(drainHook("vllm", 8000, 30)!.preStop!.exec!.command!.slice(3)).toEqual(["8000", "25", "vllm:num_requests_running,vllm:num_requests_waiting"]);
    expect(drainHook("sglang", 30000, 120)!.preStop!.exec!.command!.slice(3)).toEqual(["30000", "115", "sglang:num_running_reqs,sglang:num_queue_reqs"]);
    expect(drainHook("vllm", 8000, 5)).toBeUndefined();
  });

  it("is absent when the grace period leaves no budget", () => {
    const input = withSpec(shape("vllm-aggregated-tp2-x2"), (s) => void (s.roles[0]!.terminationGracePeriodSeconds = 0));
    const pod = renderMemberPod(input, "server", 0, 0);
    expect(pod.spec!.containers[0]!.lifecycle).toBeUndefined();
    expect(pod.spec!.terminationGracePeriodSeconds).toBe(0);
  });

  const python = spawnSync("python3", ["--version"]).status === 0;
  let server: Server | undefined;
  afterEach(() => new Promise<void>((resolve) => (server ? server.close(() => resolve()) : resolve())));

  function runHook(port: number, budget: number): Promise<{ code: number | null; ms: number }> {
    const started = Date.now();
    return new Promise((resolve) => {
      const child = spawn("python3", ["-c", DRAIN_SCRIPT, String(port), String(budget), "vllm:num_requests_running,vllm:num_requests_waiting"], {
        env: { ...process.env, BERTH_POD_IP: "127.0.0.1" },
        stdio: "ignore",
      });
      child.on("exit", (code) => resolve({ code, ms: Date.now() - started }));
    });
  }

  function fakeEngine(answer: (call: number) => { status: number; busy: number }): Promise<number> {
    let calls = 0;
    server = createServer((_req, res) => {
      const { status, busy } = answer(++calls);
      res.writeHead(status, { "content-type": "text/plain" });
      res.end(
        `# TYPE vllm:num_requests_running gauge\nvllm:num_requests_running{engine="0",model_name="m"} ${busy}.0\n` +
          `vllm:num_requests_running{engine="1",model_name="m"} 0.0\nvllm:num_requests_waiting{engine="0",model_name="m"} 0.0\n` +
          `vllm:num_requests_running_total 99\n`,
      );
    });
    return new Promise((resolve) => server!.listen(0, "127.0.0.1", () => resolve((server!.address() as AddressInfo).port)));
  }

  it.skipIf(!python)("waits while requests run, exits after two idle reads", async () => {
    const port = await fakeEngine((call) => ({ status: 200, busy: call <= 2 ? 3 : 0 }));
    const { code, ms } = await runHook(port, 20);
    expect(code).toBe(0);
    expect(ms).toBeGreaterThanOrEqual(2500);
    expect(ms).toBeLessThan(10_000);
  });

  it.skipIf(!python)("keeps waiting through 503s (elastic resize) and gives up at the budget", async () => {
    const port = await fakeEngine(() => ({ status: 503, busy: 0 }));
    const { code, ms } = await runHook(port, 2);
    expect(code).toBe(0);
    expect(ms).toBeGreaterThanOrEqual(1900);
    expect(ms).toBeLessThan(6000);
  });

  it.skipIf(!python)("returns at once when the engine is gone (connection refused)", async () => {
    const port = await fakeEngine(() => ({ status: 200, busy: 1 }));
    await new Promise<void>((resolve) => server!.close(() => resolve()));
    server = undefined;
    const { code, ms } = await runHook(port, 20);
    expect(code).toBe(0);
    expect(ms).toBeLessThan(2000);
  });
});

describe("scheduling and volumes", () => {
  it("selects nodes by GPU type and requests the vendor's GPU resource", () => {
    const nvidia = renderMemberPod(shape("vllm-dp4-local2-multihost"), "server", 0, 0);
    expect(nvidia.spec!.nodeSelector).toEqual({ [GPU_TYPE_LABEL]: "nvidia-h100-80gb" });
    expect(nvidia.spec!.containers[0]!.resources).toEqual({ requests: { "nvidia.com/gpu": "2" }, limits: { "nvidia.com/gpu": "2" } });
    const amd = renderMemberPod(shape("hf-token-source"), "server", 0, 0);
    expect(amd.spec!.nodeSelector).toEqual({ [GPU_TYPE_LABEL]: "amd-mi300x-192gb" });
    expect(amd.spec!.containers[0]!.resources).toEqual({ requests: { cpu: "8", memory: "64Gi", "amd.com/gpu": "1" }, limits: { "amd.com/gpu": "1" } });
    expect(amd.spec!.tolerations).toEqual([{ key: "amd.com/gpu", operator: "Exists", effect: "NoSchedule" }]);
    expect(renderMemberPod(shape("vllm-aggregated-tp2-x2"), "server", 0, 0).spec!.nodeSelector).toBeUndefined();
  });

  it("a CPU-only role requests no GPU and tolerates no GPU taint", () => {
    const input = withSpec(shape("vllm-aggregated-tp2-x2"), (s) => void (s.roles[0]!.resources.gpus = 0));
    const pod = renderMemberPod(input, "server", 0, 0);
    expect(pod.spec!.containers[0]!.resources).toEqual({});
    expect(pod.spec!.tolerations).toBeUndefined();
  });

  it("mounts /dev/shm as memory, sized by sharedMemory", () => {
    const pod = renderMemberPod(shape("vllm-dp4-local2-multihost"), "server", 0, 0);
    expect(pod.spec!.volumes).toContainEqual({ name: "dshm", emptyDir: { medium: "Memory", sizeLimit: "16Gi" } });
    expect(pod.spec!.containers[0]!.volumeMounts).toContainEqual({ name: "dshm", mountPath: "/dev/shm" });
  });

  it("a PVC source is mounted read-only at /models; a token comes from its Secret", () => {
    const pod = renderMemberPod(shape("pvc-source"), "server", 0, 0);
    expect(pod.spec!.volumes).toContainEqual({ name: "model", persistentVolumeClaim: { claimName: "weights", readOnly: true } });
    expect(pod.spec!.containers[0]!.volumeMounts).toContainEqual({ name: "model", mountPath: "/models", readOnly: true });
    expect(pod.spec!.containers[0]!.env).toContainEqual({ name: "HF_TOKEN", valueFrom: { secretKeyRef: { name: "hf", key: "token" } } });
  });

  it("a URI source is passed to the engine as is", () => {
    const input = withSpec(shape("vllm-aggregated-tp2-x2"), (s) => void (s.model.source = { uri: "s3://bucket/qwen3" }));
    const args = renderMemberPod(input, "server", 0, 0).spec!.containers[0]!.args!;
    expect(args[0]).toBe("s3://bucket/qwen3");
    expect(args).not.toContain("--revision");
  });

  it("pods never get Service-link variables (a Service named vllm would set VLLM_PORT)", () => {
    for (const { input } of SHAPES) for (const pod of renderDeployment(input).pods) expect(pod.spec!.enableServiceLinks).toBe(false);
  });
});
