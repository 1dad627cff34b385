// The RBAC authorizer and its 403 wording, table by table (pure).
import { describe, expect, it } from "vitest";
import { ADMIN, serviceAccountUser, type UserInfo } from "../../../k8s/sim/authn.ts";
import type { KubeObject } from "../../../k8s/sim/objects.ts";
import { authorize, forbidden, type RbacObjects, type RequestAttributes } from "../../../k8s/sim/rbac.ts";

const AGENT = serviceAccountUser("berth-system", "berth-agent");
const ALICE: UserInfo = { username: "alice", groups: ["team-a", "system:authenticated"] };

const clusterRole = (name: string, rules: object[]): KubeObject => ({ metadata: { name }, rules });
const role = (namespace: string, name: string, rules: object[]): KubeObject => ({ metadata: { namespace, name }, rules });
const binding = (name: string, roleRef: { kind: string; name: string }, subjects: object[], namespace?: string): KubeObject => ({
  metadata: { name, ...(namespace && { namespace }) },
  roleRef: { apiGroup: "rbac.authorization.k8s.io", ...roleRef },
  subjects,
});

const RBAC: RbacObjects = {
  clusterRoles: [
    clusterRole("agent", [
      { apiGroups: [""], resources: ["pods", "pods/log"], verbs: ["get", "list", "watch", "create", "delete"] },
      { apiGroups: ["apps"], resources: ["deployments"], verbs: ["*"] },
      { apiGroups: [""], resources: ["configmaps"], resourceNames: ["berth-config"], verbs: ["get", "update"] },
    ]),
    clusterRole("scaler", [{ apiGroups: ["*"], resources: ["*/scale"], verbs: ["update"] }]),
    clusterRole("ns-reader", [{ apiGroups: [""], resources: ["namespaces"], verbs: ["get"] }]),
    clusterRole("metrics", [{ nonResourceURLs: ["/metrics"], verbs: ["get"] }]),
  ],
  roles: [role("berth-x", "secrets", [{ apiGroups: [""], resources: ["secrets"], verbs: ["create"] }])],
  clusterRoleBindings: [
    binding("agent", { kind: "ClusterRole", name: "agent" }, [{ kind: "ServiceAccount", name: "berth-agent", namespace: "berth-system" }]),
    binding("scaler", { kind: "ClusterRole", name: "scaler" }, [{ kind: "Group", name: "team-a" }]),
    binding("metrics", { kind: "ClusterRole", name: "metrics" }, [{ kind: "User", name: "alice" }]),
  ],
  roleBindings: [
    binding("secrets", { kind: "Role", name: "secrets" }, [{ kind: "ServiceAccount", name: "berth-agent", namespace: "berth-system" }], "berth-x"),
    // A RoleBinding to a ClusterRole grants it in the binding's namespace only.
    binding("ns", { kind: "ClusterRole", name: "ns-reader" }, [{ kind: "User", name: "alice" }], "team-a-ns"),
    // Without a namespace, a ServiceAccount subject is the binding's own namespace's.
    binding("local-sa", { kind: "ClusterRole", name: "agent" }, [{ kind: "ServiceAccount", name: "builder" }], "ci"),
  ],
};

const res = (verb: string, resource: string, extra: Partial<RequestAttributes & { kind: "resource" }> = {}): RequestAttributes =>
  ({ kind: "resource", verb, apiGroup: "", apiVersion: "v1", resource, ...extra }) as RequestAttributes;

describe("authorize", () => {
  it.each<[string, UserInfo, RequestAttributes, boolean]>([
    ["masters may do anything", ADMIN, res("delete", "namespaces", { name: "kube-system", namespace: "kube-system" }), true],
    ["a verb the ClusterRole lists", AGENT, res("list", "pods"), true],
    ["watch is its own verb", AGENT, res("watch", "pods", { namespace: "berth-x" }), true],
    ["a verb it does not list", AGENT, res("update", "pods", { namespace: "berth-x", name: "p" }), false],
    ["a subresource is named on its own", AGENT, res("get", "pods", { subresource: "log", namespace: "x", name: "p" }), true],
    ["the resource does not grant its subresources", AGENT, res("update", "pods", { subresource: "status", namespace: "x", name: "p" }), false],
    ["verbs `*`", AGENT, res("deletecollection", "deployments", { apiGroup: "apps", namespace: "x" }), true],
    ["apiGroups must match", AGENT, res("list", "deployments", { apiGroup: "extensions" }), false],
    ["resourceNames: the named object", AGENT, res("get", "configmaps", { namespace: "x", name: "berth-config" }), true],
    ["resourceNames: another object", AGENT, res("get", "configmaps", { namespace: "x", name: "other" }), false],
    ["resourceNames: a list has no name", AGENT, res("list", "configmaps", { namespace: "x" }), false],
    ["*/scale through a Group subject", ALICE, res("update", "deployments", { apiGroup: "apps", subresource: "scale", namespace: "x", name: "d" }), true],
    ["a Role in its namespace", AGENT, res("create", "secrets", { namespace: "berth-x" }), true],
    ["a Role not in another namespace", AGENT, res("create", "secrets", { namespace: "kube-system" }), false],
    ["a Role not at the cluster scope", AGENT, res("list", "secrets"), false],
    ["RoleBinding to a ClusterRole: its namespace", ALICE, res("get", "namespaces", { namespace: "team-a-ns", name: "team-a-ns" }), true],
    ["RoleBinding to a ClusterRole: not another", ALICE, res("get", "namespaces", { namespace: "other", name: "other" }), false],
    ["ServiceAccount subject without namespace is the binding's", serviceAccountUser("ci", "builder"), res("list", "pods", { namespace: "ci" }), true],
    ["… not an account of that name elsewhere", serviceAccountUser("prod", "builder"), res("list", "pods", { namespace: "ci" }), false],
    ["discovery for every authenticated user", AGENT, { kind: "nonResource", verb: "get", path: "/apis/apps/v1" }, true],
    ["/openapi/v3 too", AGENT, { kind: "nonResource", verb: "get", path: "/openapi/v3/api/v1" }, true],
    ["a nonResourceURL granted", ALICE, { kind: "nonResource", verb: "get", path: "/metrics" }, true],
    ["a nonResourceURL not granted", AGENT, { kind: "nonResource", verb: "get", path: "/metrics" }, false],
    ["discovery is get only", AGENT, { kind: "nonResource", verb: "post", path: "/api" }, false],
    ["unauthenticated users get no discovery", { username: "system:anonymous", groups: ["system:unauthenticated"] }, { kind: "nonResource", verb: "get", path: "/api" }, false],
  ])("%s", (_, user, request, allowed) => {
    expect(authorize(user, request, RBAC).allowed).toBe(allowed);
  });
});

describe("forbidden", () => {
  it.each<[RequestAttributes, string]>([
    [res("list", "pods"), 'pods is forbidden: User "system:serviceaccount:berth-system:berth-agent" cannot list resource "pods" in API group "" at the cluster scope'],
    [res("update", "pods", { namespace: "x", name: "p" }), 'pods "p" is forbidden: User "system:serviceaccount:berth-system:berth-agent" cannot update resource "pods" in API group "" in the namespace "x"'],
    [
      res("patch", "deployments", { apiGroup: "apps", subresource: "scale", namespace: "x", name: "d" }),
      'deployments.apps "d" is forbidden: User "system:serviceaccount:berth-system:berth-agent" cannot patch resource "deployments/scale" in API group "apps" in the namespace "x"',
    ],
    [{ kind: "nonResource", verb: "get", path: "/metrics" }, 'forbidden: User "system:serviceaccount:berth-system:berth-agent" cannot get path "/metrics"'],
  ])("%j", (request, message) => {
    const error = forbidden(AGENT, request);
    expect(error.code).toBe(403);
    expect(error.reason).toBe("Forbidden");
    expect(error.message).toBe(message);
  });
});
