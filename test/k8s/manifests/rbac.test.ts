// The agent's ClusterRole is least privilege: it grants exactly the table below (each line says
// where the agent needs it), never a wildcard or a privilege-granting verb; every Kubernetes call
// found in src/agent is covered (a scan of the sources, so a new call without a rule fails here);
// and the agent holds every permission of the Role it gives external routers, which is what lets
// RBAC accept that Role and its binding without `escalate` or `bind`.
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { AppsV1Api, CoordinationV1Api, CoreV1Api, NetworkingV1Api, RbacAuthorizationV1Api, type V1ClusterRole, type V1PolicyRule, type V1Role } from "@kubernetes/client-node";
import { describe, expect, it } from "vitest";
import { AGENT_RULES, renderAgentInstall } from "../../../k8s/manifests/agent-install.ts";
import { renderDeployment } from "../../../k8s/render/index.ts";
import { SHAPES } from "../render/support.ts";

const ROOT = join(import.meta.dirname, "../../..");
const RBAC = "rbac.authorization.k8s.io";

/** `group resource verb`, the unit RBAC authorizes ("" is the core group). */
type Permission = string;
const perm = (group: string, resource: string, verb: string): Permission => `${group || "core"} ${resource} ${verb}`;

/** What the agent needs and why: the whole grant, and nothing else. */
const NEEDS: [group: string, resource: string, verbs: string[], where: string][] = [
  ["", "nodes", ["list", "watch"], "agent.ts heartbeat: core.listNode → computeInventory; informer"],
  ["", "namespaces", ["get", "list", "watch", "create", "patch"], "observe.ts core.readNamespace; informers.ts list/watch of labelled namespaces; apply.ts SSA of the project namespace (absent → create)"],
  ["", "pods", ["list", "watch"], "agent.ts heartbeat core.listPodForAllNamespaces; observe.ts core.listNamespacedPod; informer"],
  ["", "pods", ["create", "delete"], "apply.ts core.createNamespacedPod / deleteNamespacedPod (UID precondition)"],
  ["", "pods", ["patch"], "resize-executor.ts core.patchNamespacedPod: the elastic leader's proven-width annotation (uid tested)"],
  ["", "pods", ["get"], "the external routers' Role grants pods get: RBAC needs the granter to hold it"],
  ["", "pods/log", ["get"], "last log lines of a CrashLoopBackOff container"],
  ["", "events", ["list", "watch"], "FailedScheduling / image-pull reasons"],
  ["", "services", ["list", "watch", "create", "patch", "delete"], "role and headless Services: SSA, observe, delete"],
  ["", "configmaps", ["list", "watch", "create", "patch", "delete"], "router ConfigMap"],
  ["", "serviceaccounts", ["list", "watch", "create", "patch", "delete"], "external router ServiceAccount"],
  ["", "persistentvolumeclaims", ["list", "watch", "create", "patch", "delete"], "vLLM EPD encoder-cache claim: SSA, informer, observe.ts listNamespacedPersistentVolumeClaim, delete"],
  ["", "secrets", ["list", "watch", "create", "delete"], "builtin router admin-token Secret: apply.ts core.createNamespacedSecret (never patched)"],
  ["apps", "deployments", ["list", "watch", "create", "patch", "delete"], "router Deployment"],
  [RBAC, "roles", ["list", "watch", "create", "patch", "delete"], "external router Role"],
  [RBAC, "rolebindings", ["list", "watch", "create", "patch", "delete"], "external router RoleBinding"],
  ["networking.k8s.io", "networkpolicies", ["list", "watch", "create", "patch", "delete"], "project and deployment NetworkPolicies: SSA, informer, observe.ts listNamespacedNetworkPolicy, delete with the deployment"],
];
const NEEDED = new Set(NEEDS.flatMap(([group, resource, verbs]) => verbs.map((verb) => perm(group, resource, verb))));

const installed = renderAgentInstall({ apiUrl: "https://berth.example.com", token: "ba_x" });
const clusterRole = installed.find((o) => o.kind === "ClusterRole") as V1ClusterRole;
/** The agent's own namespace only: its leader election Lease. */
const leaseRole = installed.find((o) => o.kind === "Role") as V1Role;

function permissionsOf(rules: V1PolicyRule[]): Set<Permission> {
  return new Set(
    rules.flatMap((rule) => (rule.apiGroups ?? []).flatMap((g) => (rule.resources ?? []).flatMap((r) => rule.verbs.map((v) => perm(g, r, v))))),
  );
}
const GRANTED = permissionsOf(clusterRole.rules!);
const GRANTED_IN_OWN_NAMESPACE = permissionsOf(leaseRole.rules!);

// ---------------------------------------------------------------------------------------------
// What the agent's sources call. client-node method names encode verb and kind
// (`listNamespacedPod`, `readNamespace`, `readNamespacedPodLog`); KubernetesObjectApi calls
// (`objects.patch`, `objects.delete`) take any kind, so they count for every kind the agent owns.

const API_CLASSES: [group: string, api: { prototype: object }][] = [
  ["", CoreV1Api],
  ["apps", AppsV1Api],
  ["coordination.k8s.io", CoordinationV1Api],
  [RBAC, RbacAuthorizationV1Api],
  ["networking.k8s.io", NetworkingV1Api],
];
const VERB_OF: Record<string, string> = {
  list: "list",
  read: "get",
  create: "create",
  patch: "patch",
  replace: "update",
  delete: "delete",
  deleteCollection: "deletecollection",
};
/** Kind (as in client-node method names) → resource. A kind missing here fails the scan loudly. */
const RESOURCE_OF: Record<string, string> = {
  Node: "nodes",
  Namespace: "namespaces",
  Pod: "pods",
  PodLog: "pods/log",
  PodStatus: "pods/status",
  PodEviction: "pods/eviction",
  Event: "events",
  Service: "services",
  Endpoints: "endpoints",
  ConfigMap: "configmaps",
  Secret: "secrets",
  ServiceAccount: "serviceaccounts",
  PersistentVolumeClaim: "persistentvolumeclaims",
  Deployment: "deployments",
  DeploymentScale: "deployments/scale",
  Role: "roles",
  RoleBinding: "rolebindings",
  ClusterRole: "clusterroles",
  ClusterRoleBinding: "clusterrolebindings",
  LimitRange: "limitranges",
  Lease: "leases",
  NetworkPolicy: "networkpolicies",
};
const GROUP_OF_KIND: Record<string, string> = { Deployment: "apps", Role: RBAC, RoleBinding: RBAC, NetworkPolicy: "networking.k8s.io" };
const METHOD = /^(list|read|create|patch|replace|deleteCollection|delete)(Namespaced)?([A-Z]\w*?)(ForAllNamespaces)?$/;

interface Scan {
  needs: Set<Permission>;
  unknown: string[];
}

/** Permissions the given sources need; `ownedKinds` are what `objects.*` calls may touch. */
function scanSources(sources: string[], ownedKinds: { applied: string[]; deleted: string[] }): Scan {
  const needs = new Set<Permission>();
  const unknown: string[] = [];
  const methods = new Map<string, string>();
  for (const [group, api] of API_CLASSES) for (const name of Object.getOwnPropertyNames(api.prototype)) methods.set(name, group);
  for (const text of sources) {
    for (const [, name] of text.matchAll(/\.(\w+)\(/g)) {
      const group = methods.get(name!);
      const match = group === undefined ? null : METHOD.exec(name!);
      if (group === undefined || !match) continue; // not a typed-client call, or discovery (allowed to everyone)
      const [, verb, , kind] = match;
      const resource = RESOURCE_OF[kind!];
      if (!resource) unknown.push(name!);
      else needs.add(perm(group, resource, VERB_OF[verb!]!));
    }
    // Informers and raw watches name the collection by path.
    for (const [, group, resource] of text.matchAll(/["'`]\/apis?\/(?:([a-z0-9.]+)\/)?v1\/(?:namespaces\/\$\{[^}]*\}\/)?([a-z]+)/g)) {
      if (/\b(makeInformer|Watch)\b/.test(text)) for (const verb of ["list", "watch"]) needs.add(perm(group ?? "", resource!, verb));
    }
    for (const [, call] of text.matchAll(/\bobjects\.(patch|delete|create|read|list|replace)\(/g)) {
      const kinds = call === "delete" ? ownedKinds.deleted : ownedKinds.applied;
      // A server-side apply that creates is authorized as create too.
      const verbs = call === "patch" ? ["create", "patch"] : [VERB_OF[call!]!];
      for (const kind of kinds) for (const verb of verbs) needs.add(perm(GROUP_OF_KIND[kind] ?? "", RESOURCE_OF[kind]!, verb));
    }
  }
  return { needs, unknown };
}

function agentSources(): string[] {
  const dir = join(ROOT, "src/agent");
  return readdirSync(dir, { recursive: true, encoding: "utf8" })
    .filter((file) => file.endsWith(".ts"))
    .map((file) => readFileSync(join(dir, file), "utf8"));
}

/** Kinds the agent server-side applies (everything it renders but pods, which are created) and may delete (what it owns in a project namespace; never the namespace). */
function ownedKinds(sources: string[]) {
  const rendered = new Set(
    SHAPES.flatMap(({ input }) => {
      const bundle = renderDeployment(input);
      return [bundle.namespace, ...bundle.pods, ...bundle.services, ...bundle.routerObjects, ...bundle.claims, ...bundle.networkPolicies].map((o) => o.kind!);
    }),
  );
  const listed = new Set(sources.flatMap((text) => [...text.matchAll(/\.listNamespaced([A-Z]\w*)\(/g)].map((m) => m[1]!)));
  return {
    applied: [...rendered].filter((k) => k !== "Pod"),
    deleted: [...new Set([...rendered, ...listed])].filter((k) => k !== "Namespace"),
  };
}

describe("agent Role in its own namespace", () => {
  it("grants the leader election Lease get, create and update, nothing else, bound to the agent's account", () => {
    expect([...GRANTED_IN_OWN_NAMESPACE].sort()).toEqual(["coordination.k8s.io leases create", "coordination.k8s.io leases get", "coordination.k8s.io leases update"]);
    expect(leaseRole.metadata?.namespace).toBe("berth-system");
    const binding = installed.find((o) => o.kind === "RoleBinding") as { roleRef: object; subjects: object[] };
    expect(binding.roleRef).toEqual({ apiGroup: RBAC, kind: "Role", name: "berth-agent" });
    expect(binding.subjects).toEqual([{ kind: "ServiceAccount", name: "berth-agent", namespace: "berth-system" }]);
  });
});

describe("agent ClusterRole", () => {
  it("grants exactly the table of needs: every line present, nothing beyond it", () => {
    expect([...GRANTED].sort()).toEqual([...NEEDED].sort());
  });

  it("has no wildcard, no privilege-granting verb, no non-resource URL", () => {
    for (const rule of clusterRole.rules!) {
      for (const list of [rule.apiGroups, rule.resources, rule.verbs]) expect(list ?? [], JSON.stringify(rule)).not.toContain("*");
      expect(rule.verbs.filter((v) => ["escalate", "bind", "impersonate", "update", "deletecollection"].includes(v))).toEqual([]);
      expect(rule.nonResourceURLs).toBeUndefined();
      expect(rule.resources!.some((r) => r.includes("*"))).toBe(false);
    }
  });

  it("grants nothing on rbac cluster-scoped objects, nodes beyond reading, or namespaces beyond get/list/watch/create/patch", () => {
    expect([...GRANTED].filter((p) => /clusterrole/.test(p))).toEqual([]);
    expect([...GRANTED].filter((p) => p.startsWith("core nodes ")).sort()).toEqual(["core nodes list", "core nodes watch"]);
    expect([...GRANTED].filter((p) => p.startsWith("core namespaces ")).sort()).toEqual(["core namespaces create", "core namespaces get", "core namespaces list", "core namespaces patch", "core namespaces watch"]);
  });

  it("gives every rule a reason", () => {
    expect(AGENT_RULES).toHaveLength(clusterRole.rules!.length);
    for (const rule of AGENT_RULES) expect(rule.why.length, rule.resources.join()).toBeGreaterThan(20);
  });

  it("covers every Kubernetes call in src/agent", () => {
    const sources = agentSources();
    const { needs, unknown } = scanSources(sources, ownedKinds(sources));
    expect(unknown, "client-node methods whose kind the scan does not know: add them to RESOURCE_OF").toEqual([]);
    expect(needs.size).toBeGreaterThan(5); // the scan found the agent's calls at all
    expect([...needs].filter((p) => !GRANTED.has(p) && !GRANTED_IN_OWN_NAMESPACE.has(p)), "called by src/agent but not granted").toEqual([]);
    expect([...needs].filter((p) => p.startsWith("coordination.k8s.io ")).sort(), "the leader election calls were found").toEqual([...GRANTED_IN_OWN_NAMESPACE].sort());
  });

  it("the scan has teeth: calls without a rule are reported", () => {
    const owned = { applied: ["Service", "LimitRange"], deleted: ["Service"] };
    const { needs, unknown } = scanSources(
      [
        "await kube.core.listNamespacedPod(q); await kube.core.replaceNamespacedPod(x); kube.core.readNamespacedPodLog(y);",
        "await kube.objects.patch(o, undefined, undefined, 'berth-agent', true);",
        "await kube.core.listNamespacedResourceQuota(q);",
        "makeInformer(kc, `/apis/apps/v1/namespaces/${ns}/statefulsets`, list);",
      ],
      owned,
    );
    const missing = [...needs].filter((p) => !GRANTED.has(p)).sort();
    expect(missing).toEqual([
      "apps statefulsets list",
      "apps statefulsets watch",
      "core limitranges create",
      "core limitranges patch",
      "core pods update",
    ]);
    expect(needs.has("core pods/log get")).toBe(true);
    expect(unknown).toEqual(["listNamespacedResourceQuota"]);
  });

  it("holds every permission of the Role it grants external routers (so RBAC needs no escalate or bind)", () => {
    const roles = SHAPES.flatMap(({ input }) => renderDeployment(input).routerObjects.filter((o) => o.kind === "Role")) as { rules: V1PolicyRule[] }[];
    expect(roles.length).toBeGreaterThan(0); // vllm-router and sglang-gateway shapes exist
    for (const role of roles) for (const p of permissionsOf(role.rules)) expect(GRANTED.has(p), p).toBe(true);
  });
});
