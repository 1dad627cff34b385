// `--wait` for get and delete: follows the deployment watch (no polling) until the deployment
// has settled (Ready at its current generation, nothing draining, retiring or resizing) or is gone, bounded by
// --timeout. A Failed phase ends the wait at once: it needs a change, not more time.
import type { Deployment, DeploymentWatchNotice } from "../../../clients/typescript/src/index.ts";
import { CliError, type Session } from "./session.ts";

export const WAIT_HELP = `  --wait          wait until the deployment has settled (get) or is gone (delete)
  --timeout T     how long --wait waits: 90s, 5m or seconds (default 120s); exit 1 when it runs out`;

export const WAIT_OPTIONS = { wait: { type: "boolean" }, timeout: { type: "string" } } as const;

/** `90`, `90s`, `5m` → milliseconds; anything else is a usage error. */
export function parseTimeout(text: string | undefined): number {
  if (text === undefined) return 120_000;
  const match = /^(\d+(?:\.\d+)?)(s|m)?$/.exec(text);
  if (!match || Number(match[1]) <= 0) throw new CliError(`--timeout must be a duration such as 90s, 5m or 120 (got "${text}")`, 2);
  return Number(match[1]) * (match[2] === "m" ? 60_000 : 1_000);
}

/** Multi-step work in progress: a replica retiring or an elastic role resizing. */
const BUSY_CONDITIONS = ["Retiring", "Resizing"];

/** Ready at the generation the spec has now, every role at its count, nothing draining, retiring or resizing. */
export function hasSettled(deployment: Deployment): boolean {
  const status = deployment.status;
  return (
    status.phase === "Ready" &&
    status.observedGeneration === deployment.generation &&
    (status.roles ?? []).every((role) => role.ready === role.desired && role.draining === 0) &&
    !(status.conditions ?? []).some((c) => BUSY_CONDITIONS.includes(c.type) && c.status === "True")
  );
}

function describeWhy(deployment: Deployment): string {
  const notTrue = (deployment.status.conditions ?? []).filter((c) => c.status !== "True").map((c) => `${c.type} ${c.status} ${c.reason}: ${c.message}`);
  return [`phase ${deployment.status.phase}`, ...notTrue].join("; ");
}

/** Resolves with the settled deployment (until "settled") or undefined (until "gone"); throws a CliError otherwise. */
export async function waitForDeployment(session: Session, start: Deployment, until: "settled" | "gone", timeoutMs: number): Promise<Deployment | undefined> {
  if (until === "gone") {
    return watchDeployment(session, start, timeoutMs, {
      goal: "gone",
      done: () => false,
      failed: () => undefined,
      why: describeWhy,
      deleted: "done",
    });
  }
  return watchDeployment(session, start, timeoutMs, {
    goal: "Ready",
    done: hasSettled,
    failed: (d) => (d.status.phase === "Failed" ? `deployment/${start.name} Failed: ${describeWhy(d)}` : undefined),
    why: describeWhy,
    deleted: "while waiting for it to become Ready",
  });
}

export interface WatchGoal {
  /** How the goal reads in the timeout message: "Ready", "gone", "rolled out". */
  goal: string;
  done(deployment: Deployment): boolean;
  /** A message when waiting longer cannot help (e.g. Failed); undefined to keep waiting. */
  failed(deployment: Deployment): string | undefined;
  /** Where the deployment stands, for the timeout message. */
  why(deployment: Deployment): string;
  /** A deletion ends the wait: "done" (undefined is returned), or the words of the error. */
  deleted: "done" | string;
}

/**
 * Follows the deployment watch (no polling) from `start` until `goal.done`, bounded by
 * `timeoutMs`; resolves with the deployment that met it (undefined when a deletion is the goal).
 */
export async function watchDeployment(session: Session, start: Deployment, timeoutMs: number, goal: WatchGoal): Promise<Deployment | undefined> {
  if (goal.done(start)) return start;
  const stop = new AbortController();
  const timer = setTimeout(() => stop.abort(), timeoutMs);
  let latest = start;
  try {
    const notices: AsyncGenerator<DeploymentWatchNotice> = session.client.watchDeployments({
      resourceVersion: start.resourceVersion,
      projectId: start.projectId,
      signal: stop.signal,
    });
    for await (const notice of notices) {
      if (notice.object.id !== start.id) continue;
      if (notice.type === "DELETED") {
        if (goal.deleted === "done") return undefined;
        throw new CliError(`deployment/${start.name} was deleted ${goal.deleted}`);
      }
      latest = notice.object;
      if (goal.done(latest)) return latest;
      const failure = goal.failed(latest);
      if (failure) throw new CliError(failure);
    }
  } finally {
    clearTimeout(timer);
    stop.abort();
  }
  throw new CliError(
    `deployment/${start.name} not ${goal.goal} after ${timeoutMs / 1000}s (${goal.why(latest)}); raise --timeout or see berth describe ${start.name}`,
  );
}
