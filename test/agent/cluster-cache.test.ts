// The informers' cache (pure): the deployment-id index stays exact under adds, updates that move
// an object, deletes and relists; a deployment's observation from it has the relist's shape;
// a change enqueues the deployment named on the object (or every deployment of a namespace).
import type { KubernetesObject } from "@kubernetes/client-node";
import { describe, expect, it } from "vitest";
import { affectedKeys, type CachedKind, cachedKindOf, ClusterCache, kindsFor, observeFromCache } from "../../src/agent/cluster-cache.ts";
import { emptyObserved, type Observed } from "../../src/agent/observe.ts";
import { aggregated, disaggregated, merged, observed, withRouter } from "./support.ts";

const object = (namespace: string | undefined, name: string, deploymentId?: string, rv = "1"): KubernetesObject => ({
  metadata: { namespace, name, resourceVersion: rv, labels: deploymentId ? { "berth.dev/deployment-id": deploymentId } : {} },
});

type Step = ["upsert" | "remove", KubernetesObject];

describe("ClusterCache", () => {
  it.each<[string, Step[], Record<string, string[]>, number]>([
    ["an added pod is indexed under its deployment", [["upsert", object("ns", "a", "d1")]], { d1: ["ns/a"], d2: [] }, 1],
    [
      "two deployments, two namespaces, same name",
      [
        ["upsert", object("ns", "a", "d1")],
        ["upsert", object("other", "a", "d2")],
      ],
      { d1: ["ns/a"], d2: ["other/a"] },
      2,
    ],
    [
      "an update replaces the object in place",
      [
        ["upsert", object("ns", "a", "d1", "1")],
        ["upsert", object("ns", "a", "d1", "2")],
      ],
      { d1: ["ns/a@2"] },
      1,
    ],
    [
      "an update that changes the deployment id moves the index entry",
      [
        ["upsert", object("ns", "a", "d1")],
        ["upsert", object("ns", "a", "d2", "2")],
      ],
      { d1: [], d2: ["ns/a@2"] },
      1,
    ],
    [
      "a delete removes the object and its index entry",
      [
        ["upsert", object("ns", "a", "d1")],
        ["upsert", object("ns", "b", "d1")],
        ["remove", object("ns", "a", "d1", "5")],
      ],
      { d1: ["ns/b"] },
      1,
    ],
    ["deleting an unknown object changes nothing", [["remove", object("ns", "a", "d1")]], { d1: [] }, 0],
    ["an object without a deployment id is held but indexed nowhere", [["upsert", object("ns", "a")]], { d1: [] }, 1],
    [
      "a delete carrying other labels still removes the indexed object (keyed by namespace/name)",
      [
        ["upsert", object("ns", "a", "d1")],
        ["remove", object("ns", "a")],
      ],
      { d1: [] },
      0,
    ],
  ])("%s", (_, steps, expected, size) => {
    const cache = new ClusterCache();
    for (const [verb, o] of steps) (verb === "upsert" ? cache.upsert("pods", o) : cache.remove("pods", o));
    for (const [id, keys] of Object.entries(expected)) {
      const got = cache
        .ofDeployment("pods", id)
        .map((o) => `${o.metadata!.namespace}/${o.metadata!.name}${o.metadata!.resourceVersion === "1" ? "" : `@${o.metadata!.resourceVersion}`}`)
        .sort();
      expect(got).toEqual(keys);
    }
    expect(cache.size("pods")).toBe(size);
    expect(cache.size("services")).toBe(0);
  });

  it("keeps kinds apart", () => {
    const cache = new ClusterCache();
    cache.upsert("pods", object("ns", "a", "d1"));
    cache.upsert("services", object("ns", "a", "d1"));
    cache.remove("pods", object("ns", "a", "d1"));
    expect(cache.ofDeployment("services", "d1")).toHaveLength(1);
    expect(cache.get("services", "ns", "a")).toBeDefined();
    expect(cache.get("pods", "ns", "a")).toBeUndefined();
  });
});

/** Loads an observation into a cache, as the informers would, with the namespace object. */
function cacheOf(o: Observed, namespace: string): ClusterCache {
  const cache = new ClusterCache();
  if (o.namespaceExists) cache.upsert("namespaces", { metadata: { name: namespace, labels: o.namespaceLabels } });
  for (const name of o.namespacePolicies) cache.upsert("networkpolicies", { kind: "NetworkPolicy", metadata: { name, namespace } });
  const kinds: Array<[CachedKind, KubernetesObject[]]> = [
    ["pods", [...o.pods, ...o.routerPods]],
    ["services", o.services],
    ["deployments", o.deployments],
    ["configmaps", o.configMaps],
    ["secrets", o.secrets],
    ["serviceaccounts", o.serviceAccounts],
    ["roles", o.roles],
    ["rolebindings", o.roleBindings],
    ["networkpolicies", o.networkPolicies],
  ];
  for (const [kind, objects] of kinds) for (const obj of objects) cache.upsert(kind, obj);
  return cache;
}

const byName = (o: Observed) =>
  Object.fromEntries(
    Object.entries(o).map(([k, v]) => [k, Array.isArray(v) ? v.map((x: KubernetesObject | string) => (typeof x === "string" ? x : x.metadata!.name)).sort() : v]),
  );

describe("observeFromCache", () => {
  const plain = aggregated(2);
  const routed = disaggregated("vllm", 1, 1);
  const ns = "berth-team";
  const id = plain.deployment.id;
  const routedObserved = withRouter(routed, merged(observed(routed, ["ready"], { role: "prefill" }), observed(routed, ["starting"], { role: "decode" })));

  it.each<[string, Observed, boolean]>([
    ["engine pods and the role Service", observed(plain, ["ready", "starting"]), true],
    ["a missing namespace", { ...emptyObserved(false) }, true],
    ["router objects, router pods apart from engine pods, the token Secret", routedObserved, true],
  ])("gives what a relist gives: %s", (_, expected, routerKinds) => {
    expect(byName(observeFromCache(cacheOf(expected, ns), ns, id, routerKinds))).toEqual(byName(expected));
  });

  it("leaves router-only kinds empty unless asked for, as the relist does", () => {
    const got = observeFromCache(cacheOf(routedObserved, ns), ns, id, false);
    expect(got.deployments).toEqual([]);
    expect(got.secrets).toEqual([]);
    expect(got.roles).toEqual([]);
    expect(got.routerPods.length).toBe(1);
    expect(got.services.length).toBeGreaterThan(0);
  });

  it("counts only objects of the deployment in its namespace", () => {
    const cache = cacheOf(observed(plain, ["ready"]), ns);
    cache.upsert("pods", object("elsewhere", "chat-main-r0-m0", id));
    cache.upsert("pods", object(ns, "other-main-r0-m0", "dep_other"));
    expect(observeFromCache(cache, ns, id).pods.map((p) => p.metadata!.namespace)).toEqual([ns]);
  });
});

describe("affectedKeys", () => {
  const known = new Map([
    ["d1", "berth-team"],
    ["d2", "berth-team"],
    ["d3", "berth-other"],
  ]);
  it.each<[string, CachedKind, KubernetesObject, string[]]>([
    ["a pod names its deployment", "pods", object("berth-team", "p", "d1"), ["d1"]],
    ["a router Secret names its deployment", "secrets", object("berth-other", "s", "d3"), ["d3"]],
    ["a deployment's NetworkPolicy names its deployment", "networkpolicies", object("berth-team", "x-engines", "d2"), ["d2"]],
    ["a namespace-wide NetworkPolicy concerns every deployment of its namespace", "networkpolicies", object("berth-team", "berth-default-deny"), ["d1", "d2"]],
    ["an object of a deployment the agent does not know", "pods", object("berth-team", "p", "dX"), []],
    ["an object without the label", "services", object("berth-team", "s"), []],
    ["a namespace concerns every deployment in it", "namespaces", object(undefined, "berth-team"), ["d1", "d2"]],
    ["a namespace no known deployment lives in", "namespaces", object(undefined, "berth-none"), []],
  ])("%s", (_, kind, obj, keys) => {
    expect(affectedKeys(kind, obj, known)).toEqual(keys);
  });
});

describe("kinds", () => {
  it.each([
    ["Pod", "pods"],
    ["RoleBinding", "rolebindings"],
    ["Namespace", "namespaces"],
    ["Endpoints", undefined],
  ])("%s is cached as %s", (kind, cached) => {
    expect(cachedKindOf(kind)).toBe(cached);
  });

  it("a routerless pass needs five kinds (claims too: EPD needs no router kind to own one; NetworkPolicies guard every pod), a routed or deleting one all eleven", () => {
    expect(kindsFor(false)).toEqual(["namespaces", "pods", "services", "persistentvolumeclaims", "networkpolicies"]);
    expect(kindsFor(true)).toHaveLength(11);
  });
});
