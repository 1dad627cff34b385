// Builders for the agent's pure tests: a render input and observed pods in given states.
import type { V1Pod, V1Service } from "@kubernetes/client-node";
import { renderInstancePods, renderRoleService, type RenderInput } from "../../k8s/render/index.ts";
import { applySpecDefaults, type DeploymentSpecInput } from "../../src/domain/deployment-spec.ts";
import type { Observed } from "../../src/agent/observe.ts";

export const aggregated = (replicas: number, overrides: Partial<DeploymentSpecInput> = {}): RenderInput => ({
  deployment: {
    id: "dep_0123456789abcdefghjk",
    name: "chat",
    projectName: "team",
    generation: 1,
    spec: applySpecDefaults({
      model: { name: "Qwen/Qwen3-8B" },
      engine: { name: "vllm", image: "vllm/vllm-openai:v0.11.0" },
      roles: [{ name: "main", replicas, resources: { gpus: 1 } }],
      ...overrides,
    }),
  },
  options: { routerImage: "ghcr.io/berth/berth:0.1.0" },
});

export type PodState = "ready" | "starting" | "terminating" | "stale" | "unschedulable" | "imagepull" | "crashloop";

/** The observed pod of instance `replica` in a state; `stale` carries another spec hash. */
export function observedPod(input: RenderInput, replica: number, state: PodState = "ready"): V1Pod {
  const pod = structuredClone(renderInstancePods(input, "main", replica)[0]!);
  pod.metadata!.uid = `uid-${replica}`;
  const readyCondition = { type: "Ready", status: state === "ready" || state === "stale" ? "True" : "False" };
  pod.status = { phase: "Running", conditions: [readyCondition] };
  if (state === "stale") pod.metadata!.labels!["berth.dev/spec-hash"] = "0000000000000000";
  if (state === "terminating") pod.metadata!.deletionTimestamp = new Date("2026-01-01T00:00:00Z");
  if (state === "unschedulable") {
    pod.status = {
      phase: "Pending",
      conditions: [
        {
          type: "PodScheduled",
          status: "False",
          reason: "Unschedulable",
          message: "0/1 nodes are available: 1 Insufficient nvidia.com/gpu.",
        },
      ],
    };
  }
  if (state === "imagepull") {
    pod.status.containerStatuses = [
      { name: "engine", image: "x", imageID: "", ready: false, restartCount: 0, state: { waiting: { reason: "ImagePullBackOff", message: "Back-off pulling image" } } },
    ];
  }
  if (state === "crashloop") {
    pod.status.containerStatuses = [
      {
        name: "engine",
        image: "x",
        imageID: "",
        ready: false,
        restartCount: 3,
        state: { waiting: { reason: "CrashLoopBackOff" } },
        lastState: { terminated: { exitCode: 1, message: "loading\nCUDA out of memory" } },
      },
    ];
  }
  return pod;
}

/** `states[i]` is replica i's pod; null leaves that replica missing. */
export function observed(input: RenderInput, states: Array<PodState | null>, options: { clusterIP?: string; namespace?: boolean } = {}): Observed {
  const service: V1Service = structuredClone(renderRoleService(input, "main"));
  service.metadata!.uid = "uid-svc";
  service.spec!.clusterIP = options.clusterIP ?? "127.0.200.7";
  return {
    namespaceExists: options.namespace ?? true,
    pods: states.flatMap((state, replica) => (state ? [observedPod(input, replica, state)] : [])),
    services: options.namespace === false ? [] : [service],
  };
}
