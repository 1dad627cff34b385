// The RBAC authorizer (pure): request attributes and the stored Roles, ClusterRoles and their
// bindings → allowed or not, with the rule or the reason. It follows
// https://kubernetes.io/docs/reference/access-authn-authz/rbac/: rules only grant; a RoleBinding
// grants its Role or ClusterRole in its own namespace, a ClusterRoleBinding everywhere;
// `system:masters` may do anything; the default discovery roles (`system:discovery`,
// `system:basic-user`, `system:public-info-viewer`) let every authenticated user read
// discovery, /version, /healthz and /openapi. A denial renders as kube-apiserver's 403.
import { AUTHENTICATED, MASTERS, type UserInfo } from "./authn.ts";
import { ApiError, type KubeObject } from "./objects.ts";

export type Verb = "get" | "list" | "watch" | "create" | "update" | "patch" | "delete" | "deletecollection";

export type RequestAttributes =
  | {
      kind: "resource";
      verb: Verb;
      apiGroup: string;
      apiVersion: string;
      resource: string;
      subresource?: string;
      namespace?: string;
      name?: string;
    }
  | { kind: "nonResource"; verb: string; path: string };

export interface RbacObjects {
  roles: readonly KubeObject[];
  clusterRoles: readonly KubeObject[];
  roleBindings: readonly KubeObject[];
  clusterRoleBindings: readonly KubeObject[];
}

export interface Decision {
  allowed: boolean;
  /** Which binding and role allowed it, or why nothing did. */
  reason: string;
}

interface PolicyRule {
  apiGroups?: string[];
  resources?: string[];
  resourceNames?: string[];
  verbs?: string[];
  nonResourceURLs?: string[];
}

interface Subject {
  kind: string;
  name: string;
  namespace?: string;
  apiGroup?: string;
}

/** Paths the default ClusterRoles system:discovery, system:basic-user and system:public-info-viewer open to every authenticated user. */
const DISCOVERY_RULES: PolicyRule[] = [
  { verbs: ["get"], nonResourceURLs: ["/api", "/api/*", "/apis", "/apis/*", "/openapi", "/openapi/*", "/version", "/version/", "/healthz", "/livez", "/readyz"] },
  { verbs: ["create"], apiGroups: ["authorization.k8s.io"], resources: ["selfsubjectaccessreviews", "selfsubjectrulesreviews"] },
];

const includes = (values: readonly string[] | undefined, value: string) => (values ?? []).some((v) => v === "*" || v === value);

function pathMatches(patterns: readonly string[] | undefined, path: string): boolean {
  return (patterns ?? []).some((p) => p === "*" || p === path || (p.endsWith("*") && path.startsWith(p.slice(0, -1))));
}

/** Whether one rule grants the request (pure). */
export function ruleAllows(rule: PolicyRule, request: RequestAttributes): boolean {
  if (!includes(rule.verbs, request.verb)) return false;
  if (request.kind === "nonResource") return pathMatches(rule.nonResourceURLs, request.path);
  if (!includes(rule.apiGroups, request.apiGroup)) return false;
  const resource = request.subresource ? `${request.resource}/${request.subresource}` : request.resource;
  // `*` covers resources and their subresources; `*/scale` a subresource of any resource.
  const resourceOk = (rule.resources ?? []).some(
    (r) => r === "*" || r === resource || (request.subresource !== undefined && r === `*/${request.subresource}`),
  );
  if (!resourceOk) return false;
  const names = rule.resourceNames ?? [];
  return names.length === 0 || (request.name !== undefined && names.includes(request.name));
}

function subjectMatches(subject: Subject, user: UserInfo, bindingNamespace: string | undefined): boolean {
  switch (subject.kind) {
    case "User":
      return subject.name === user.username;
    case "Group":
      return user.groups.includes(subject.name);
    case "ServiceAccount": {
      const namespace = subject.namespace || bindingNamespace;
      return user.username === `system:serviceaccount:${namespace}:${subject.name}`;
    }
    default:
      return false;
  }
}

const bindingName = (b: KubeObject) => (b.metadata.namespace ? `RoleBinding "${b.metadata.name}" of ${b.metadata.namespace}` : `ClusterRoleBinding "${b.metadata.name}"`);

/** The RBAC decision (pure). */
export function authorize(user: UserInfo, request: RequestAttributes, rbac: RbacObjects): Decision {
  if (user.groups.includes(MASTERS)) return { allowed: true, reason: `member of ${MASTERS}` };
  if (user.groups.includes(AUTHENTICATED) && DISCOVERY_RULES.some((rule) => ruleAllows(rule, request))) {
    return { allowed: true, reason: "the default discovery roles" };
  }
  const namespace = request.kind === "resource" ? request.namespace : undefined;
  const bindings = [
    ...rbac.clusterRoleBindings,
    // A RoleBinding grants only in its namespace, and nothing to cluster-scoped or non-resource requests.
    ...(namespace === undefined ? [] : rbac.roleBindings.filter((b) => b.metadata.namespace === namespace)),
  ];
  for (const binding of bindings) {
    const subjects = (binding.subjects ?? []) as Subject[];
    if (!subjects.some((s) => subjectMatches(s, user, binding.metadata.namespace))) continue;
    const ref = (binding.roleRef ?? {}) as { kind?: string; name?: string };
    const role =
      ref.kind === "ClusterRole"
        ? rbac.clusterRoles.find((r) => r.metadata.name === ref.name)
        : binding.metadata.namespace !== undefined
          ? rbac.roles.find((r) => r.metadata.namespace === binding.metadata.namespace && r.metadata.name === ref.name)
          : undefined;
    if (!role) continue;
    const rules = (role.rules ?? []) as PolicyRule[];
    if (rules.some((rule) => ruleAllows(rule, request))) return { allowed: true, reason: `${bindingName(binding)} of ${ref.kind} "${ref.name}"` };
  }
  return { allowed: false, reason: "" };
}

/** kube-apiserver's forbiddenMessage (k8s.io/apiserver endpoints/handlers/responsewriters). */
export function forbiddenMessage(user: UserInfo, request: RequestAttributes): string {
  if (request.kind === "nonResource") return `User ${JSON.stringify(user.username)} cannot ${request.verb} path ${JSON.stringify(request.path)}`;
  const resource = request.subresource ? `${request.resource}/${request.subresource}` : request.resource;
  const scope = request.namespace ? `in the namespace ${JSON.stringify(request.namespace)}` : "at the cluster scope";
  return `User ${JSON.stringify(user.username)} cannot ${request.verb} resource ${JSON.stringify(resource)} in API group ${JSON.stringify(request.apiGroup)} ${scope}`;
}

/** The 403 Status kube-apiserver answers (apierrors.NewForbidden around forbiddenMessage). */
export function forbidden(user: UserInfo, request: RequestAttributes, reason = ""): ApiError {
  const why = forbiddenMessage(user, request) + (reason ? `: ${reason}` : "");
  if (request.kind === "nonResource") return new ApiError(403, "Forbidden", `forbidden: ${why}`, {});
  const qualified = request.apiGroup ? `${request.resource}.${request.apiGroup}` : request.resource;
  const message = request.name ? `${qualified} ${JSON.stringify(request.name)} is forbidden: ${why}` : `${qualified} is forbidden: ${why}`;
  return new ApiError(403, "Forbidden", message, {
    ...(request.name && { name: request.name }),
    ...(request.apiGroup && { group: request.apiGroup }),
    kind: request.resource,
  });
}
