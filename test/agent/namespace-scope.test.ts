// The agent's mode from --namespaces, and when namespaced mode refuses to touch a namespace.
import { describe, expect, it } from "vitest";
import { type AgentMode, namespaceRefusal, parseAgentMode } from "../../src/agent/namespace-scope.ts";

describe("parseAgentMode", () => {
  it.each([
    [undefined, { mode: "cluster" }],
    ["", { mode: "cluster" }],
    ["  ", { mode: "cluster" }],
    ["berth-a", { mode: "namespaced", namespaces: ["berth-a"] }],
    [" berth-a , berth-b,,berth-a ", { mode: "namespaced", namespaces: ["berth-a", "berth-b"] }],
  ])("%j → %j", (input, mode) => {
    expect(parseAgentMode(input)).toEqual(mode);
  });

  it.each(["Berth-A", "berth_a", "berth-a,-x", "a".repeat(64)])("rejects %j naming the entry", (input) => {
    expect(() => parseAgentMode(input)).toThrow(/is not a namespace name/);
  });
});

describe("namespaceRefusal", () => {
  const cluster: AgentMode = { mode: "cluster" };
  const namespaced: AgentMode = { mode: "namespaced", namespaces: ["berth-a", "berth-b"] };
  it.each<[string, AgentMode, { namespace: string; exists: boolean; readProblem?: string; missingLabels?: Record<string, string> }, RegExp | undefined]>([
    [
      "listed and present but without its Pod Security labels",
      namespaced,
      { namespace: "berth-a", exists: true, missingLabels: { "pod-security.kubernetes.io/enforce": "baseline" } },
      /berth-a lacks the Pod Security labels pod-security\.kubernetes\.io\/enforce.*kubectl label namespace berth-a pod-security\.kubernetes\.io\/enforce=baseline/,
    ],
    ["cluster mode re-applies a namespace without labels instead", cluster, { namespace: "berth-a", exists: true, missingLabels: { "pod-security.kubernetes.io/enforce": "baseline" } }, undefined],
    ["no label missing", namespaced, { namespace: "berth-a", exists: true, missingLabels: {} }, undefined],
    ["cluster mode never refuses, even a missing namespace", cluster, { namespace: "berth-x", exists: false }, undefined],
    ["listed and present", namespaced, { namespace: "berth-b", exists: true }, undefined],
    ["not listed", namespaced, { namespace: "berth-x", exists: true }, /berth-x is not in this agent's allow-list \(berth-a, berth-b\)/],
    ["not listed wins over missing", namespaced, { namespace: "berth-x", exists: false }, /not in this agent's allow-list/],
    ["listed but missing", namespaced, { namespace: "berth-a", exists: false }, /berth-a does not exist: a namespaced agent never creates namespaces/],
    ["listed but unreadable", namespaced, { namespace: "berth-a", exists: false, readProblem: "namespace berth-a could not be read (403): forbidden" }, /\(403\): forbidden: grant the agent its Role in berth-a/],
  ])("%s", (_, mode, facts, expected) => {
    const refusal = namespaceRefusal(mode, facts);
    if (expected === undefined) expect(refusal).toBeUndefined();
    else expect(refusal).toMatch(expected);
  });
});
