// The simulated Job controller's next step (pure), as kube-controller-manager decides it for a
// non-indexed Job: pods for missing completions within parallelism, complete at `completions`
// successes, failed past `backoffLimit` failures or `activeDeadlineSeconds`.
import { describe, expect, it } from "vitest";
import { type JobCounts, planJob } from "../../../k8s/sim/job-controller.ts";

const counts = (c: Partial<JobCounts> = {}): JobCounts => ({ active: 0, ready: 0, succeeded: 0, failed: 0, ...c });

describe("planJob", () => {
  it.each([
    ["a new Job gets its one pod", {}, counts(), { kind: "create", pods: 1 }],
    ["its pod running: wait", {}, counts({ active: 1 }), { kind: "wait" }],
    ["one success of one completion: complete", {}, counts({ succeeded: 1 }), { kind: "complete" }],
    ["a failure within the backoff limit: a new pod", { backoffLimit: 3 }, counts({ failed: 3 }), { kind: "create", pods: 1 }],
    ["past the backoff limit: failed", { backoffLimit: 3 }, counts({ failed: 4 }), { kind: "fail", reason: "BackoffLimitExceeded", message: "Job has reached the specified backoff limit" }],
    ["the default backoff limit is 6", {}, counts({ failed: 6 }), { kind: "create", pods: 1 }],
    ["parallelism 2 of 3 completions", { completions: 3, parallelism: 2 }, counts(), { kind: "create", pods: 2 }],
    ["never more pods than completions left", { completions: 3, parallelism: 2 }, counts({ succeeded: 2 }), { kind: "create", pods: 1 }],
    ["a suspended Job starts nothing", { suspend: true }, counts(), { kind: "wait" }],
    ["success wins over failures", { backoffLimit: 0 }, counts({ succeeded: 1, failed: 5 }), { kind: "complete" }],
  ])("%s", (_, spec, observed, step) => {
    expect(planJob(spec, observed, 0, 1_000)).toEqual(step);
  });

  it("fails a Job active past activeDeadlineSeconds, and not before", () => {
    expect(planJob({ activeDeadlineSeconds: 10 }, counts({ active: 1 }), 0, 9_999)).toEqual({ kind: "wait" });
    expect(planJob({ activeDeadlineSeconds: 10 }, counts({ active: 1 }), 0, 10_000)).toMatchObject({ kind: "fail", reason: "DeadlineExceeded" });
  });
});
