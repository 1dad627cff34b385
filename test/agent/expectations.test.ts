// Expectations (pure): each applied action names what the cache must show before the next plan
// of its deployment; a delete is met by gone, replaced or terminating; an apply by presence with
// the applied spec hash; waiting is bounded by the deadline.
import type { KubernetesObject } from "@kubernetes/client-node";
import { describe, expect, it } from "vitest";
import type { CachedKind } from "../../src/agent/cluster-cache.ts";
import { type Expectation, expectationsOf, expectationWait, isMet, type Lookup } from "../../src/agent/expectations.ts";
import { type Action, planDeployment } from "../../src/agent/plan.ts";
import { renderInstancePods, renderNamespace, renderRoleService } from "../../k8s/render/index.ts";
import { aggregated } from "./support.ts";

const input = aggregated(1);
const pod = renderInstancePods(input, "main", 0)[0]!;
const ns = "berth-team";

describe("expectationsOf", () => {
  it.each<[string, Action, Expectation[]]>([
    ["applyNamespace: the namespace, cluster-scoped", { kind: "applyNamespace", object: renderNamespace("team") }, [{ kind: "namespaces", namespace: undefined, name: ns }]],
    [
      "applyService: the Service with its spec hash",
      { kind: "applyService", object: renderRoleService(input, "main") },
      [{ kind: "services", namespace: ns, name: "chat-main", specHash: renderRoleService(input, "main").metadata!.labels!["berth.dev/spec-hash"] }],
    ],
    [
      "createPod: the pod with its spec hash",
      { kind: "createPod", object: pod },
      [{ kind: "pods", namespace: ns, name: pod.metadata!.name!, specHash: pod.metadata!.labels!["berth.dev/spec-hash"] }],
    ],
    [
      "createTokenSecret: the Secret",
      { kind: "createTokenSecret", namespace: ns, name: "chat-router-admin", key: "token", labels: {} },
      [{ kind: "secrets", namespace: ns, name: "chat-router-admin" }],
    ],
    [
      "deletePod: that UID gone",
      { kind: "deletePod", namespace: ns, name: "p", uid: "u1", reason: "stale" },
      [{ kind: "pods", namespace: ns, name: "p", deletedUid: "u1" }],
    ],
    ["deleteService: that UID gone", { kind: "deleteService", namespace: ns, name: "s", uid: "u2" }, [{ kind: "services", namespace: ns, name: "s", deletedUid: "u2" }]],
    [
      "deleteObject of a Role",
      { kind: "deleteObject", ref: { apiVersion: "rbac.authorization.k8s.io/v1", kind: "Role", namespace: ns, name: "r", uid: "u3" } },
      [{ kind: "roles", namespace: ns, name: "r", deletedUid: "u3" }],
    ],
    [
      "deleteObject of an orphan router pod",
      { kind: "deleteObject", ref: { apiVersion: "v1", kind: "Pod", namespace: ns, name: "router-x", uid: "u4" } },
      [{ kind: "pods", namespace: ns, name: "router-x", deletedUid: "u4" }],
    ],
  ])("%s", (_, action, expected) => {
    expect(expectationsOf(action)).toEqual(expected);
  });

  it("covers every action a first pass plans (namespace, its policies and the deployment's, Service, pod)", () => {
    const actions = planDeployment({ render: input, deleting: false, observed: { ...emptyish } });
    expect(actions.flatMap(expectationsOf).map((e) => e.kind)).toEqual(["namespaces", "networkpolicies", "networkpolicies", "networkpolicies", "services", "pods"]);
  });
});

const emptyish = {
  namespaceExists: false,
  namespaceLabels: {},
  namespacePolicies: [],
  networkPolicies: [],
  pods: [],
  services: [],
  routerPods: [],
  deployments: [],
  configMaps: [],
  secrets: [],
  serviceAccounts: [],
  roles: [],
  roleBindings: [],
  claims: [],
};

const cached = (uid: string, extra: { terminating?: boolean; hash?: string } = {}): KubernetesObject => ({
  metadata: {
    namespace: ns,
    name: "p",
    uid,
    labels: extra.hash ? { "berth.dev/spec-hash": extra.hash } : {},
    ...(extra.terminating ? { deletionTimestamp: "2026-01-01T00:00:00Z" as unknown as Date } : {}),
  },
});
const holding =
  (object: KubernetesObject | undefined): Lookup =>
  (kind: CachedKind, namespace, name) =>
    kind === "pods" && namespace === ns && name === "p" ? object : undefined;

describe("isMet", () => {
  const create: Expectation = { kind: "pods", namespace: ns, name: "p", specHash: "h1" };
  const remove: Expectation = { kind: "pods", namespace: ns, name: "p", deletedUid: "u1" };
  it.each<[string, Expectation, KubernetesObject | undefined, boolean]>([
    ["a create not yet seen", create, undefined, false],
    ["a create seen with its hash", create, cached("u9", { hash: "h1" }), true],
    ["a create seen, but the old object (other hash) is still there", create, cached("u1", { hash: "h0" }), false],
    ["an apply without a hash: presence is enough", { kind: "pods", namespace: ns, name: "p" }, cached("u1"), true],
    ["a delete whose object is still there, not terminating", remove, cached("u1"), false],
    ["a delete whose object is terminating", remove, cached("u1", { terminating: true }), true],
    ["a delete whose object is gone", remove, undefined, true],
    ["a delete whose name now holds another object", remove, cached("u2"), true],
    ["another kind under the same name does not count", { kind: "services", namespace: ns, name: "p" }, cached("u1"), false],
  ])("%s → %s", (_, expectation, object, met) => {
    expect(isMet(expectation, holding(object))).toBe(met);
  });
});

describe("expectationWait", () => {
  const remove: Expectation = { kind: "pods", namespace: ns, name: "p", deletedUid: "u1" };
  it.each<[string, { items: Expectation[]; deadline: number } | undefined, KubernetesObject | undefined, number, number, number]>([
    ["nothing pending: plan now", undefined, cached("u1"), 1_000, 0, 0],
    ["unmet before the deadline: wait until it", { items: [remove], deadline: 5_000 }, cached("u1"), 1_000, 4_000, 1],
    ["unmet past the deadline: plan anyway, naming what is unmet", { items: [remove], deadline: 5_000 }, cached("u1"), 5_000, 0, 1],
    ["met: plan now", { items: [remove], deadline: 5_000 }, undefined, 1_000, 0, 0],
  ])("%s", (_, pending, object, now, waitMs, unmet) => {
    const got = expectationWait(pending, holding(object), now);
    expect(got.waitMs).toBe(waitMs);
    expect(got.unmet).toHaveLength(unmet);
  });
});
