// The process kubelet with real processes on loopback: a rendered vLLM pod becomes Running and
// Ready on its own 127.0.x.y and serves chat completions (through its Service's ClusterIP too);
// the scheduler's FailedScheduling; ImagePullBackOff; CrashLoopBackOff with the log; preStop
// then SIGTERM on a graceful delete; SIGKILL at the end of the grace period; `$(VAR)`
// expansion; the elastic leader's shell wrapper and Ray worker ranks; stop({ now: true }).
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import * as k8s from "@kubernetes/client-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { aDeployment } from "../../fixtures/deployment-builder.ts";
import { alive, apply, isReady, render, startTestCluster, waitFor, type TestCluster } from "./support.ts";

let t: TestCluster;
let scratch: string;
beforeAll(async () => {
  t = await startTestCluster();
  scratch = mkdtempSync(join(tmpdir(), "berth-kubelet-test-"));
});
afterAll(async () => {
  await t?.stop();
  rmSync(scratch, { recursive: true, force: true });
});

const NODE = process.execPath;

async function readyPod(ns: string, name: string, timeoutMs = 20_000): Promise<k8s.V1Pod> {
  return waitFor(`${ns}/${name} to be Ready`, async () => {
    const pod = await t.core.readNamespacedPod({ namespace: ns, name });
    return isReady(pod) ? pod : undefined;
  }, timeoutMs);
}

async function events(ns: string, name: string): Promise<k8s.CoreV1Event[]> {
  return (await t.core.listNamespacedEvent({ namespace: ns, fieldSelector: `involvedObject.name=${name}` })).items;
}

async function chat(host: string, port: number): Promise<{ status: number; body: Record<string, any>; simulated: string | null }> {
  const response = await fetch(`http://${host}:${port}/v1/chat/completions`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ model: "Qwen/Qwen3-8B", messages: [{ role: "user", content: "Say hello" }], max_tokens: 4 }),
  });
  return { status: response.status, body: (await response.json()) as Record<string, any>, simulated: response.headers.get("x-berth-simulated") };
}

const enginePod = (name: string, container: Partial<k8s.V1Container>, spec: Partial<k8s.V1PodSpec> = {}): k8s.V1Pod => ({
  metadata: { name },
  spec: { containers: [{ name: "engine", image: "vllm/vllm-openai:v0.11.0", ...container }], ...spec },
});

describe("a rendered vLLM deployment", () => {
  const rendered = render(aDeployment().tp(2).build());
  const ns = rendered.namespace.metadata!.name!;
  const podName = rendered.pods[0]!.metadata!.name!;

  it("runs Running and Ready on its own loopback address and answers chat completions, directly and through its ClusterIP", async () => {
    await apply(t, [rendered.namespace, ...rendered.services, ...rendered.pods]);
    const created = Date.now();
    const pod = await readyPod(ns, podName);
    const readyMs = Date.now() - created;
    expect(readyMs).toBeLessThan(15_000);
    expect(pod.status?.phase).toBe("Running");
    expect(pod.status?.podIP).toMatch(/^127\.0\.(\d+)\.(\d+)$/);
    expect(pod.status?.podIP).not.toBe("127.0.0.1");
    expect(pod.spec?.nodeName).toMatch(/^gpu-[ab]$/);
    expect(pod.status?.containerStatuses?.[0]).toMatchObject({ name: "engine", ready: true, started: true, restartCount: 0, state: { running: {} } });

    const direct = await chat(pod.status!.podIP!, 8000);
    expect(direct.status).toBe(200);
    expect(direct.simulated).toBe("true");
    expect(direct.body.choices[0].message.content.length).toBeGreaterThan(0);

    const service = await t.core.readNamespacedService({ namespace: ns, name: rendered.services[0]!.metadata!.name! });
    expect(service.spec?.clusterIP).toMatch(/^127\.0\.(2[0-5]\d)\.\d+$/);
    const endpoints = await waitFor("the endpoint", async () => {
      const ep = await t.core.readNamespacedEndpoints({ namespace: ns, name: service.metadata!.name! });
      return ep.subsets?.[0]?.addresses?.length ? ep : undefined;
    });
    expect(endpoints.subsets?.[0]).toMatchObject({ addresses: [{ ip: pod.status!.podIP, targetRef: { name: podName } }], ports: [{ name: "http", port: 8000 }] });
    const slices = await t.kc.makeApiClient(k8s.DiscoveryV1Api).listNamespacedEndpointSlice({ namespace: ns, labelSelector: `kubernetes.io/service-name=${service.metadata!.name}` });
    expect(slices.items[0]?.endpoints).toEqual([expect.objectContaining({ addresses: [pod.status!.podIP], conditions: { ready: true, serving: true, terminating: false } })]);
    const viaService = await chat(service.spec!.clusterIP!, 8000);
    expect(viaService.status).toBe(200);

    const log = await t.core.readNamespacedPodLog({ namespace: ns, name: podName, tailLines: 1 });
    expect(log).toContain("berth-sim (simulated vllm): listening on http://" + pod.status!.podIP + ":8000");
  });

  it("on delete runs the preStop drain (python3, polling the engine's metrics) and then stops it", async () => {
    const pod = await t.core.readNamespacedPod({ namespace: ns, name: podName });
    const deleted = Date.now();
    const answer = (await t.core.deleteNamespacedPod({ namespace: ns, name: podName })) as k8s.V1Pod;
    expect(answer.metadata?.deletionTimestamp).toBeDefined();
    expect(answer.metadata?.deletionGracePeriodSeconds).toBe(30);
    const terminating = await t.core.readNamespacedPod({ namespace: ns, name: podName });
    expect(terminating.metadata?.deletionTimestamp).toBeDefined();
    await waitFor("the pod to go", async () => (await t.core.listNamespacedPod({ namespace: ns, fieldSelector: `metadata.name=${podName}` })).items.length === 0);
    // The drain hook needs two zero readings one second apart.
    const tookMs = Date.now() - deleted;
    expect(tookMs).toBeGreaterThanOrEqual(900);
    expect(tookMs).toBeLessThan(25_000);
    const failure = await fetch(`http://${pod.status!.podIP}:8000/health`).then(
      () => "answered",
      () => "refused",
    );
    expect(failure).toBe("refused");
    const reasons = (await events(ns, podName)).map((e) => e.reason);
    expect(reasons).toContain("Killing");
    expect(reasons).not.toContain("FailedPreStopHook");
  });
});

describe("scheduling", () => {
  it("leaves a pod that fits nowhere Pending with the scheduler's FailedScheduling event", async () => {
    await t.core.createNamespace({ body: { metadata: { name: "too-big" } } });
    await t.core.createNamespacedPod({ namespace: "too-big", body: enginePod("huge", { command: ["vllm", "serve", "m"], resources: { limits: { "nvidia.com/gpu": "16" } } }) });
    const message = "0/2 nodes are available: 2 Insufficient nvidia.com/gpu. preemption: 0/2 nodes are available: 2 No preemption victims found for incoming pod.";
    const event = await waitFor("FailedScheduling", async () => (await events("too-big", "huge")).find((e) => e.reason === "FailedScheduling"));
    expect(event).toMatchObject({ type: "Warning", message, source: { component: "default-scheduler" }, involvedObject: { kind: "Pod", name: "huge", namespace: "too-big" } });
    const pod = await t.core.readNamespacedPod({ namespace: "too-big", name: "huge" });
    expect(pod.status?.phase).toBe("Pending");
    expect(pod.spec?.nodeName).toBeUndefined();
    expect(pod.status?.conditions).toEqual([expect.objectContaining({ type: "PodScheduled", status: "False", reason: "Unschedulable", message })]);
  });

  it("places by GPU type (nodeSelector berth.dev/gpu-type)", async () => {
    await t.core.createNamespace({ body: { metadata: { name: "gpu-type" } } });
    await t.core.createNamespacedPod({
      namespace: "gpu-type",
      body: enginePod("l4", { command: ["vllm", "serve", "m"], resources: { limits: { "nvidia.com/gpu": "1" } } }, { nodeSelector: { "berth.dev/gpu-type": "nvidia-l4-24gb" } }),
    });
    const event = await waitFor("FailedScheduling", async () => (await events("gpu-type", "l4")).find((e) => e.reason === "FailedScheduling"));
    expect(event.message).toBe(
      "0/2 nodes are available: 2 node(s) didn't match Pod's node affinity/selector. preemption: 0/2 nodes are available: 2 Preemption is not helpful for scheduling.",
    );
  });
});

describe("container failures", () => {
  beforeAll(async () => {
    await t.core.createNamespace({ body: { metadata: { name: "failures" } } });
  });

  it("reports an image with no simulated program as ErrImagePull, then ImagePullBackOff", async () => {
    await t.core.createNamespacedPod({ namespace: "failures", body: { metadata: { name: "nginx" }, spec: { containers: [{ name: "web", image: "nginx:1.27" }] } } });
    const reasons = new Set<string>();
    const pod = await waitFor("ImagePullBackOff", async () => {
      const current = await t.core.readNamespacedPod({ namespace: "failures", name: "nginx" });
      const reason = current.status?.containerStatuses?.[0]?.state?.waiting?.reason;
      if (reason) reasons.add(reason);
      return reason === "ImagePullBackOff" ? current : undefined;
    }, 10_000, 20);
    expect(reasons).toContain("ErrImagePull");
    expect(pod.status?.phase).toBe("Pending");
    expect(pod.status?.containerStatuses?.[0]?.state?.waiting?.message).toBe('Back-off pulling image "nginx:1.27"');
    const messages = (await events("failures", "nginx")).map((e) => `${e.reason}: ${e.message}`);
    expect(messages).toEqual(expect.arrayContaining([expect.stringMatching(/^Failed: Failed to pull image "nginx:1.27": rpc error: code = NotFound/), "BackOff: Back-off pulling image \"nginx:1.27\""]));
    const log = await t.core.readNamespacedPodLog({ namespace: "failures", name: "nginx" }).catch((error: k8s.ApiException<string>) => error);
    expect((log as k8s.ApiException<string>).code).toBe(400);
  });

  it("restarts a crashing command with backoff: CrashLoopBackOff, lastState, restartCount, and the last log line", async () => {
    await t.core.createNamespacedPod({
      namespace: "failures",
      body: enginePod("crasher", { command: ["/bin/sh", "-c", "echo loading weights; echo 'fatal: CUDA out of memory' >&2; exit 3"] }),
    });
    const pod = await waitFor("CrashLoopBackOff", async () => {
      const current = await t.core.readNamespacedPod({ namespace: "failures", name: "crasher" });
      return current.status?.containerStatuses?.[0]?.state?.waiting?.reason === "CrashLoopBackOff" ? current : undefined;
    });
    const status = pod.status!.containerStatuses![0]!;
    expect(status.restartCount).toBeGreaterThanOrEqual(1);
    expect(status.lastState?.terminated).toMatchObject({ exitCode: 3, reason: "Error" });
    expect(status.state?.waiting?.message).toMatch(/^back-off \d+(ms|s) restarting failed container=engine pod=crasher_failures\(/);
    expect(pod.status?.phase).toBe("Running");
    const last = await t.core.readNamespacedPodLog({ namespace: "failures", name: "crasher", tailLines: 1 });
    expect(last).toBe("fatal: CUDA out of memory\n");
    const both = await t.core.readNamespacedPodLog({ namespace: "failures", name: "crasher" });
    expect(both).toBe("loading weights\nfatal: CUDA out of memory\n");
    expect(await t.core.readNamespacedPodLog({ namespace: "failures", name: "crasher", previous: true })).toBe(both);
    expect((await events("failures", "crasher")).map((e) => e.reason)).toContain("BackOff");
  });

  it("restarts a container whose liveness probe fails", async () => {
    await t.core.createNamespacedPod({
      namespace: "failures",
      body: enginePod("unlive", {
        command: [NODE, "-e", "setInterval(() => {}, 1000)"],
        livenessProbe: { tcpSocket: { port: 9 }, periodSeconds: 1, failureThreshold: 2, timeoutSeconds: 1 },
      }),
    });
    const status = await waitFor("a restart", async () => {
      const current = (await t.core.readNamespacedPod({ namespace: "failures", name: "unlive" })).status?.containerStatuses?.[0];
      return current && current.restartCount >= 1 ? current : undefined;
    });
    expect(status.lastState?.terminated).toMatchObject({ exitCode: 143, signal: 15, reason: "Error" });
    const messages = (await events("failures", "unlive")).map((e) => e.message);
    expect(messages).toContain("Container engine failed liveness probe, will be restarted");
    expect(messages).toEqual(expect.arrayContaining([expect.stringMatching(/^Liveness probe failed: dial tcp 127\.0\.\d+\.\d+:9: connect: connection refused$/)]));
  });

  it("reports a missing Secret as CreateContainerConfigError and a missing command as StartError", async () => {
    await t.core.createNamespacedPod({
      namespace: "failures",
      body: enginePod("no-secret", { command: ["vllm", "serve", "m"], env: [{ name: "HF_TOKEN", valueFrom: { secretKeyRef: { name: "hf", key: "token" } } }] }),
    });
    await t.core.createNamespacedPod({ namespace: "failures", body: enginePod("no-binary", { command: ["/opt/serve.sh", "--rank", "0"] }) });
    const waiting = await waitFor("CreateContainerConfigError", async () => {
      const state = (await t.core.readNamespacedPod({ namespace: "failures", name: "no-secret" })).status?.containerStatuses?.[0]?.state?.waiting;
      return state?.reason === "CreateContainerConfigError" ? state : undefined;
    });
    expect(waiting.message).toBe('secret "hf" not found');
    const terminated = await waitFor("StartError", async () => {
      const status = (await t.core.readNamespacedPod({ namespace: "failures", name: "no-binary" })).status?.containerStatuses?.[0];
      return status?.lastState?.terminated ?? status?.state?.terminated;
    });
    expect(terminated).toMatchObject({ exitCode: 128, reason: "StartError" });
    expect(terminated.message).toContain('exec: "/opt/serve.sh"');
  });
});

describe("environment and commands", () => {
  it("expands $(VAR) from env, fieldRefs and Secrets, and gives the process BERTH_POD_IP", async () => {
    await t.core.createNamespace({ body: { metadata: { name: "env" } } });
    await t.core.createNamespacedSecret({ namespace: "env", body: { metadata: { name: "creds" }, stringData: { token: "s3cret" } } });
    await t.core.createNamespacedPod({
      namespace: "env",
      body: enginePod(
        "printer",
        {
          command: ["/bin/sh", "-c", 'echo "args=$0 $1 $2"; echo "env=$BERTH_POD_IP $TOKEN"; sleep 60'],
          args: ["$(MY_IP)", "$(MY_NS)/$(MY_NAME)", "$$(MY_IP)"],
          env: [
            { name: "MY_IP", valueFrom: { fieldRef: { fieldPath: "status.podIP" } } },
            { name: "MY_NS", valueFrom: { fieldRef: { fieldPath: "metadata.namespace" } } },
            { name: "MY_NAME", valueFrom: { fieldRef: { fieldPath: "metadata.name" } } },
            { name: "TOKEN", valueFrom: { secretKeyRef: { name: "creds", key: "token" } } },
          ],
        },
        { terminationGracePeriodSeconds: 0 },
      ),
    });
    const pod = await readyPod("env", "printer");
    const ip = pod.status!.podIP!;
    const log = await waitFor("two lines", async () => {
      const text = await t.core.readNamespacedPodLog({ namespace: "env", name: "printer" });
      return text.split("\n").length >= 3 ? text : undefined;
    });
    expect(log).toBe(`args=${ip} env/printer $(MY_IP)\nenv=${ip} s3cret\n`);
    // follow=true streams: the lines so far arrive at once, and the stream stays open.
    const controller = new AbortController();
    const response = await fetch(`${t.cluster.url}/api/v1/namespaces/env/pods/printer/log?follow=true&tailLines=1`, { signal: controller.signal });
    const reader = response.body!.getReader();
    const { value } = await reader.read();
    expect(new TextDecoder().decode(value)).toBe(`env=${ip} s3cret\n`);
    controller.abort();
  });

  it("runs an elastic leader's `sh -c … exec \"$@\"` engine and its Ray worker ranks", async () => {
    const rendered = render(aDeployment().name("dsv2").elastic(2, 8).tp(2).build(), "elastic");
    await apply(t, [rendered.namespace, ...rendered.services, ...rendered.pods]);
    const [leader, worker] = rendered.pods.map((p) => p.metadata!.name!) as [string, string];
    const ready = await readyPod("berth-elastic", leader);
    const workerPod = await waitFor("the worker to run", async () => {
      const pod = await t.core.readNamespacedPod({ namespace: "berth-elastic", name: worker });
      return pod.status?.phase === "Running" && isReady(pod) ? pod : undefined;
    });
    const info = await fetch(`http://${ready.status!.podIP}:8000/metrics`).then((r) => r.text());
    // Every vLLM series carries engine="<rank>": two ranks, as `-dp 2` asked.
    expect(new Set([...info.matchAll(/vllm:num_requests_running\{[^}]*engine="(\d+)"/g)].map((m) => m[1]))).toEqual(new Set(["0", "1"]));
    const workerLog = await t.core.readNamespacedPodLog({ namespace: "berth-elastic", name: worker });
    expect(workerLog).toContain("berth-sim: simulating `ray start --address=");
    expect(workerLog).toContain(":6379 --node-ip-address=" + workerPod.status!.podIP);
    await t.core.deleteNamespace({ name: "berth-elastic" });
  });
});

describe("termination", () => {
  beforeAll(async () => {
    await t.core.createNamespace({ body: { metadata: { name: "graceful" } } });
  });

  // Writes "<event> <ms>" lines to a file: when it got SIGTERM.
  const recorder = (file: string) =>
    `const fs = require("fs"); const log = (what) => fs.appendFileSync(${JSON.stringify(file)}, what + " " + Date.now() + "\\n");` +
    `log("started"); process.on("SIGTERM", () => { log("sigterm"); process.exit(0); }); setInterval(() => {}, 1000);`;

  it("runs preStop with the container's environment, then sends SIGTERM, then removes the pod", async () => {
    const file = join(scratch, "graceful.log");
    await t.core.createNamespacedPod({
      namespace: "graceful",
      body: enginePod(
        "hooked",
        {
          command: [NODE, "-e", recorder(file)],
          env: [{ name: "BERTH_POD_IP", valueFrom: { fieldRef: { fieldPath: "status.podIP" } } }],
          lifecycle: { preStop: { exec: { command: ["/bin/sh", "-c", `sleep 0.5; echo "prestop $(date +%s%3N) $BERTH_POD_IP" >> ${file}`] } } },
        },
        { terminationGracePeriodSeconds: 20 },
      ),
    });
    const pod = await readyPod("graceful", "hooked");
    await waitFor("the process to start", async () => readFileSync(file, "utf8").includes("started"));
    await t.core.deleteNamespacedPod({ namespace: "graceful", name: "hooked" });
    await waitFor("the pod to go", async () => (await t.core.listNamespacedPod({ namespace: "graceful", fieldSelector: "metadata.name=hooked" })).items.length === 0);
    const lines = readFileSync(file, "utf8").trim().split("\n").map((line) => line.split(" "));
    expect(lines.map((l) => l[0])).toEqual(["started", "prestop", "sigterm"]);
    expect(lines[1]![2]).toBe(pod.status!.podIP);
    expect(Number(lines[2]![1])).toBeGreaterThanOrEqual(Number(lines[1]![1]));
  });

  it("kills a process that ignores SIGTERM when the grace period ends", async () => {
    const watchEvents: k8s.V1Pod[] = [];
    const request = await new k8s.Watch(t.kc).watch("/api/v1/namespaces/graceful/pods", { fieldSelector: "metadata.name=stubborn" }, (_type, pod: k8s.V1Pod) => watchEvents.push(pod), () => {});
    try {
      await t.core.createNamespacedPod({
        namespace: "graceful",
        body: enginePod(
          "stubborn",
          { command: [NODE, "-e", 'process.on("SIGTERM", () => console.log("ignoring SIGTERM")); console.log("up"); setInterval(() => {}, 1000);'] },
          { terminationGracePeriodSeconds: 1 },
        ),
      });
      await readyPod("graceful", "stubborn");
      await waitFor("the handler", async () => (await t.core.readNamespacedPodLog({ namespace: "graceful", name: "stubborn" })).includes("up"));
      const deleted = Date.now();
      await t.core.deleteNamespacedPod({ namespace: "graceful", name: "stubborn" });
      await waitFor("the pod to go", async () => (await t.core.listNamespacedPod({ namespace: "graceful", fieldSelector: "metadata.name=stubborn" })).items.length === 0);
      const tookMs = Date.now() - deleted;
      expect(tookMs).toBeGreaterThanOrEqual(900);
      expect(tookMs).toBeLessThan(5_000);
      const last = watchEvents[watchEvents.length - 1]!;
      expect(last.status?.containerStatuses?.[0]?.state?.terminated).toMatchObject({ exitCode: 137, signal: 9, reason: "Error" });
      expect(last.status?.phase).toBe("Failed");
    } finally {
      request.abort();
    }
  });
});

describe("stop({ now: true })", () => {
  it("returns within 3 s with no pod process left, preStop and grace notwithstanding", async () => {
    const own = await startTestCluster({ podAddresses: { first: "127.0.150.1", last: "127.0.150.254" } });
    try {
      await own.core.createNamespace({ body: { metadata: { name: "busy" } } });
      for (const name of ["a", "b"]) {
        await own.core.createNamespacedPod({
          namespace: "busy",
          body: enginePod(
            name,
            { command: [NODE, "-e", 'process.on("SIGTERM", () => {}); setInterval(() => {}, 1000);'], lifecycle: { preStop: { exec: { command: ["sleep", "60"] } } } },
            { terminationGracePeriodSeconds: 120 },
          ),
        });
      }
      await waitFor("both pods to run", async () => own.cluster.processIds().length === 2);
      const pids = own.cluster.processIds();
      const started = Date.now();
      await own.cluster.stop({ now: true });
      expect(Date.now() - started).toBeLessThan(3_000);
      expect(pids.filter(alive)).toEqual([]);
    } finally {
      await own.stop();
    }
  });
});
