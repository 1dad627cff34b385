// The decisions behind `berth rollout`: rolled out or not (the UpToDate condition, else the
// counts, never an unobserved count), and the history's actor and change columns.
import { describe, expect, it } from "vitest";
import type { Deployment, Revision } from "../../clients/typescript/src/index.ts";
import { describeActor, describeChange, previousGeneration, rolloutProgress } from "../../src/cli/user/rollout.ts";

type Status = Deployment["status"];
const deployment = (generation: number, status: Status, replicas = 2): Deployment =>
  ({ id: "dep_x", name: "chat", generation, spec: { roles: [{ name: "main", kind: "server", replicas }] }, status }) as unknown as Deployment;
const role = (updated: number | undefined, ready: number | undefined, desired = 2) => ({ name: "main", kind: "server" as const, desired, updated, ready });
const upToDate = (status: "True" | "False", reason: string, observedGeneration?: number) => ({
  type: "UpToDate" as const,
  status,
  reason,
  message: reason === "SurgeDoesNotFit" ? "1 more GPU needed to surge" : "1 of 2 updated",
  lastTransitionTime: "2026-11-30T12:00:00Z",
  ...(observedGeneration !== undefined && { observedGeneration }),
});

describe("rolloutProgress", () => {
  it.each([
    ["not observed yet", deployment(3, { phase: "Ready", observedGeneration: 2, roles: [role(2, 2)] }), false, "waiting for the agent to observe generation 3 (observed 2)"],
    ["never observed", deployment(1, { phase: "Pending" }), false, "waiting for the agent to observe generation 1 (observed none)"],
    ["counts done", deployment(3, { phase: "Ready", observedGeneration: 3, roles: [role(2, 2)] }), true, "generation 3 rolled out"],
    ["counts behind", deployment(3, { phase: "Ready", observedGeneration: 3, roles: [role(1, 2)] }), false, "generation 3 rolling out: main not yet updated and ready"],
    ["updated not observed", deployment(3, { phase: "Ready", observedGeneration: 3, roles: [role(undefined, 2)] }), false, "generation 3 rolling out: main not yet updated and ready"],
    ["no role status", deployment(3, { phase: "Starting", observedGeneration: 3 }), false, "generation 3 rolling out: main not yet updated and ready"],
    [
      "UpToDate False decides over counts",
      deployment(3, { phase: "Ready", observedGeneration: 3, roles: [role(2, 2)], conditions: [upToDate("False", "SurgeDoesNotFit", 3)] }),
      false,
      "generation 3 rolling out: SurgeDoesNotFit: 1 more GPU needed to surge",
    ],
    ["UpToDate True", deployment(3, { phase: "Ready", observedGeneration: 3, roles: [role(1, 1)], conditions: [upToDate("True", "AllUpdated")] }), true, "generation 3 rolled out"],
    [
      "an UpToDate of an older generation falls back to counts",
      deployment(3, { phase: "Ready", observedGeneration: 3, roles: [role(1, 2)], conditions: [upToDate("True", "AllUpdated", 2)] }),
      false,
      "generation 3 rolling out: main not yet updated and ready",
    ],
  ])("%s", (_name, d, done, summary) => {
    const progress = rolloutProgress(d);
    expect(progress.done).toBe(done);
    expect(progress.failed).toBe(false);
    expect(progress.summary).toBe(summary);
  });

  it("reports per-role counts with ? where not observed, and Failed as failed", () => {
    expect(rolloutProgress(deployment(2, { phase: "Starting", observedGeneration: 2, roles: [role(undefined, 1)] })).roles).toEqual(["main: ?/2 updated, 1/2 ready"]);
    const failed = rolloutProgress(
      deployment(2, {
        phase: "Failed",
        observedGeneration: 2,
        conditions: [{ type: "Scheduled", status: "False", reason: "InsufficientGPU", message: "needs 2 GPUs", lastTransitionTime: "2026-11-30T12:00:00Z" }],
      }),
    );
    expect(failed).toMatchObject({ done: false, failed: true, summary: "generation 2 failed: Scheduled InsufficientGPU: needs 2 GPUs" });
  });
});

const revision = (generation: number, replicas: number, extra: Partial<Revision> = {}): Revision =>
  ({
    generation,
    spec: { engine: { name: "vllm", image: "vllm/vllm-openai:v0.11.0" }, roles: [{ name: "main", replicas }] },
    actor: { kind: "user", keyId: "key_abc" },
    createdAt: "2026-11-30T12:00:00.000Z",
    ...extra,
  }) as unknown as Revision;

describe("history columns", () => {
  it("names the actor", () => {
    expect(describeActor(revision(1, 1))).toBe("user key_abc");
    expect(describeActor(revision(2, 1, { actor: { kind: "autoscaler", keyId: "bac_1" } }))).toBe("autoscaler");
    expect(describeActor(revision(3, 1, { actor: { kind: "system" } }))).toBe("system");
  });

  it.each([
    [revision(1, 1), undefined, "created"],
    [revision(7, 1), undefined, "(oldest retained)"],
    [revision(2, 3), revision(1, 1), "/roles/0/replicas 1 -> 3"],
    [revision(3, 1, { rollbackOf: 1 }), revision(2, 3), "rollback to 1: /roles/0/replicas 3 -> 1"],
    [revision(4, 1), revision(3, 1), "no spec change"],
  ])("%# %j", (rev, previous, text) => {
    expect(describeChange(rev, previous)).toBe(text);
  });

  it("shows three changes and counts the rest", () => {
    const before = revision(1, 1);
    const after = revision(2, 2);
    (after.spec as { engine: { image: string; name: string } }).engine = { name: "sglang", image: "other" };
    (after.spec as unknown as { router: unknown }).router = { kind: "berth" };
    expect(describeChange(after, before)).toBe('/engine/name "vllm" -> "sglang", /engine/image "vllm/vllm-openai:v0.11.0" -> "other", /roles/0/replicas 1 -> 2, +1 more');
  });

  it("undo goes to the newest generation before the current", () => {
    expect(previousGeneration(5, [revision(5, 1), revision(4, 1)])).toBe(4);
    expect(previousGeneration(5, [revision(5, 1)])).toBeUndefined();
    expect(previousGeneration(5, [revision(3, 1), revision(5, 1)])).toBe(3);
  });
});
