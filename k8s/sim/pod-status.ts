// Pod status from container states (pure): the phase as the kubelet's getPhase computes it,
// and the pod conditions with lastTransitionTime kept while a condition's status holds.

export interface TerminatedState {
  exitCode: number;
  signal?: number;
  reason: string;
  message?: string;
  startedAt: string;
  finishedAt: string;
  containerID?: string;
}

export interface ContainerState {
  waiting?: { reason: string; message?: string };
  running?: { startedAt: string };
  terminated?: TerminatedState;
}

export interface ContainerStatus {
  name: string;
  state: ContainerState;
  lastState: ContainerState;
  ready: boolean;
  started: boolean;
  restartCount: number;
  image: string;
  imageID: string;
  containerID?: string;
}

export interface PodCondition {
  type: string;
  status: "True" | "False";
  reason?: string;
  message?: string;
  lastProbeTime: null;
  lastTransitionTime: string;
}

/**
 * kubelet getPhase: a waiting container that never ran keeps the pod Pending; one that ran
 * (lastState terminated) counts as stopped; all stopped with restartPolicy Always is Running
 * (they are restarting); Never/OnFailure end Succeeded or Failed. `stopping`: the pod is
 * being deleted, so no container will restart.
 */
export function podPhase(restartPolicy: string, statuses: readonly ContainerStatus[], stopping = false): "Pending" | "Running" | "Succeeded" | "Failed" {
  let waiting = 0;
  let running = 0;
  let stopped = 0;
  let succeeded = 0;
  for (const status of statuses) {
    if (status.state.running) running++;
    else if (status.state.terminated) {
      stopped++;
      if (status.state.terminated.exitCode === 0) succeeded++;
    } else if (status.state.waiting) {
      if (status.lastState.terminated) stopped++;
      else waiting++;
    } else waiting++;
  }
  if (waiting > 0 && !stopping) return "Pending";
  if (running > 0) return "Running";
  if (stopped > 0 && running === 0) {
    if (stopping) return stopped === succeeded && waiting === 0 ? "Succeeded" : "Failed";
    if (restartPolicy === "Always") return "Running";
    if (stopped === succeeded) return "Succeeded";
    if (restartPolicy === "Never") return "Failed";
    return "Running";
  }
  return stopping ? "Failed" : "Pending";
}

/** Conditions in kubectl's usual order; transition times carried over from `previous`. */
export function podConditions(
  input: { sandboxReady: boolean; statuses: readonly ContainerStatus[]; now: string },
  previous: readonly Partial<PodCondition>[] = [],
): PodCondition[] {
  const unready = input.statuses.filter((s) => !s.ready).map((s) => s.name);
  const containersReady = unready.length === 0;
  const wanted: Omit<PodCondition, "lastTransitionTime" | "lastProbeTime">[] = [
    { type: "PodReadyToStartContainers", status: input.sandboxReady ? "True" : "False" },
    { type: "Initialized", status: "True" },
    containersReady
      ? { type: "Ready", status: "True" }
      : { type: "Ready", status: "False", reason: "ContainersNotReady", message: `containers with unready status: [${unready.join(" ")}]` },
    containersReady
      ? { type: "ContainersReady", status: "True" }
      : { type: "ContainersReady", status: "False", reason: "ContainersNotReady", message: `containers with unready status: [${unready.join(" ")}]` },
    { type: "PodScheduled", status: "True" },
  ];
  return wanted.map((condition) => {
    const before = previous.find((p) => p.type === condition.type);
    const since = before && before.status === condition.status && before.lastTransitionTime ? before.lastTransitionTime : input.now;
    return { ...condition, lastProbeTime: null, lastTransitionTime: since };
  });
}

/** Go's time.Duration String for whole seconds: 10s, 1m20s, 5m0s. */
export function goDuration(ms: number): string {
  if (ms > 0 && ms < 1000) return `${Math.round(ms)}ms`;
  const seconds = Math.max(0, Math.round(ms / 1000));
  if (seconds < 60) return `${seconds}s`;
  return `${Math.floor(seconds / 60)}m${seconds % 60}s`;
}
