// The agent's own install objects (pure): Namespace, ServiceAccount, least-privilege ClusterRole
// and ClusterRoleBinding, a Role and RoleBinding for its leader election Lease, the credential Secret and a single-replica Deployment. `AGENT_RULES` is
// the one list of what the agent may do, each rule with the reason it exists; the YAML carries
// those reasons as comments. Nothing here reads files, the clock or the environment.
import type {
  V1ClusterRole,
  V1ClusterRoleBinding,
  V1Deployment,
  V1Namespace,
  V1PolicyRule,
  V1Role,
  V1RoleBinding,
  V1Secret,
  V1ServiceAccount,
} from "@kubernetes/client-node";
import { Document } from "yaml";

/** The berth version these manifests install; a test keeps it equal to package.json's. */
export const BERTH_VERSION = "0.1.0";
export const DEFAULT_IMAGE = `ghcr.io/berth/berth:${BERTH_VERSION}`;
export const DEFAULT_NAMESPACE = "berth-system";
/** Every object's name (cluster-scoped ones too: one agent per cluster). */
export const AGENT_NAME = "berth-agent";
export const PLACEHOLDER_API_URL = "REPLACE_WITH_API_URL";
export const PLACEHOLDER_TOKEN = "REPLACE_WITH_AGENT_TOKEN";
/** Secret keys, named as the env vars `berth agent` reads (src/cli/agent.ts). */
export const SECRET_KEYS = { apiUrl: "BERTH_API_URL", token: "BERTH_AGENT_TOKEN" } as const;

export interface AgentInstallOptions {
  apiUrl: string;
  token: string;
  image?: string;
  namespace?: string;
}

export interface AgentRule {
  apiGroup: string;
  resources: string[];
  verbs: string[];
  why: string;
}

// Server-side apply of an object that does not exist yet is authorized as `create` as well as
// `patch`, so every applied kind needs both. Informers (list + watch) replace relists, hence
// `watch` beside every `list`. No `update`, `deletecollection`, `bind`, `escalate` or `*`.
const APPLIED = ["list", "watch", "create", "patch", "delete"];

export const AGENT_RULES: readonly AgentRule[] = [
  {
    apiGroup: "",
    resources: ["nodes"],
    verbs: ["list", "watch"],
    why: "Heartbeat inventory: GPU capacity and allocatable per node, and the node's berth.dev/gpu-type label.",
  },
  {
    apiGroup: "",
    resources: ["namespaces"],
    verbs: ["get", "list", "watch", "create", "patch"],
    why: "Project namespaces berth-<project> are created on demand by server-side apply (create + patch); an informer lists and watches those labelled managed-by=berth-agent to know which exist. Never deleted: the agent holds no delete here.",
  },
  {
    apiGroup: "",
    resources: ["pods"],
    verbs: ["get", "list", "watch", "create", "patch", "delete"],
    why:
      "Engine pods are created directly and deleted one by one with UID preconditions; their spec is immutable and never patched, " +
      "but an elastic leader's `berth.dev/elastic-width` annotation records each width the agent proved after a resize. " +
      "list/watch cluster-wide also feed the heartbeat's free-GPU count. get + list + watch is exactly the Role the agent grants to " +
      "external routers (vllm-router, sglang-gateway) for pod discovery: RBAC lets it create that Role and its RoleBinding only " +
      "because it holds those permissions itself, which is narrower than holding `escalate` on roles or `bind`.",
  },
  {
    apiGroup: "",
    resources: ["pods/log"],
    verbs: ["get"],
    why: "The last log lines of a crashing engine container, reported in the CrashLoopBackOff condition.",
  },
  {
    apiGroup: "",
    resources: ["events"],
    verbs: ["list", "watch"],
    why: "Scheduling and image-pull events (FailedScheduling, ErrImagePull) that explain why a pod is not running.",
  },
  {
    apiGroup: "",
    resources: ["services", "configmaps", "serviceaccounts"],
    verbs: APPLIED,
    why: "Role and headless Services, the router's ConfigMap and ServiceAccount: applied, observed by label, deleted with the deployment.",
  },
  {
    apiGroup: "",
    resources: ["persistentvolumeclaims"],
    verbs: APPLIED,
    why: "vLLM EPD's shared encoder-cache claim <deployment>-ec-cache: applied, observed by label (its phase explains Pending pods), deleted with the deployment.",
  },
  {
    apiGroup: "networking.k8s.io",
    resources: ["networkpolicies"],
    verbs: APPLIED,
    why:
      "Tenant isolation: every project namespace gets a default-deny and a DNS policy (never deleted), each deployment policies opening only its own paths " +
      "(deleted with it); an informer watches them so a missing or drifted one is applied again.",
  },
  {
    apiGroup: "",
    resources: ["secrets"],
    verbs: ["list", "watch", "create", "delete"],
    why:
      "The built-in router's admin-token Secret: created once (never patched, so the token stays as first drawn), observed by " +
      "label, deleted with the deployment. Bound cluster-wide (project namespaces " +
      "appear at run time), so list/watch also reach Secrets outside berth-* namespaces: whoever holds the agent's ServiceAccount token can read every Secret.",
  },
  {
    apiGroup: "apps",
    resources: ["deployments"],
    verbs: APPLIED,
    why: "The router Deployment of a deployment with `router` set (routers are stateless; engines are bare pods).",
  },
  {
    apiGroup: "rbac.authorization.k8s.io",
    resources: ["roles", "rolebindings"],
    verbs: APPLIED,
    why: "The external routers' Role (pods get/list/watch, nothing more) and its RoleBinding to the router's ServiceAccount.",
  },
];

/**
 * Granted by a Role in the agent's own namespace only: the Lease `berth agent --leader-elect`
 * holds (named berth-agent; client-go's Lease lock reads, creates and updates it, never patches,
 * lists, watches or deletes it).
 */
export const AGENT_NAMESPACE_RULES: readonly AgentRule[] = [
  {
    apiGroup: "coordination.k8s.io",
    resources: ["leases"],
    verbs: ["get", "create", "update"],
    why: "Leader election (--leader-elect): the Lease berth-agent in this namespace is read, created once and updated with its resourceVersion (renewals, takeovers, the release on shutdown).",
  },
];

const RBAC_GROUP = "rbac.authorization.k8s.io";
const LABELS = {
  "app.kubernetes.io/name": AGENT_NAME,
  "app.kubernetes.io/component": "agent",
  "app.kubernetes.io/part-of": "berth",
};
const SELECTOR = { "app.kubernetes.io/name": AGENT_NAME };
/** Distroless's "nonroot": a numeric id, so runAsNonRoot is checkable whatever the image's USER says. */
const NON_ROOT_ID = 65532;

export type AgentInstallObject = V1Namespace | V1ServiceAccount | V1ClusterRole | V1ClusterRoleBinding | V1Role | V1RoleBinding | V1Secret | V1Deployment;

const policyRules = (rules: readonly AgentRule[]) =>
  rules.map(({ apiGroup, resources, verbs }): V1PolicyRule => ({ apiGroups: [apiGroup], resources: [...resources], verbs: [...verbs] }));

/** The objects in apply order: the namespace first, the Deployment last (its Secret and account exist by then). */
export function renderAgentInstall(options: AgentInstallOptions): AgentInstallObject[] {
  const namespace = options.namespace ?? DEFAULT_NAMESPACE;
  const image = options.image ?? DEFAULT_IMAGE;
  // Fresh objects each time, so a caller editing one rendered object never changes another.
  const meta = () => ({ name: AGENT_NAME, namespace, labels: { ...LABELS } });
  const ns: V1Namespace = {
    apiVersion: "v1",
    kind: "Namespace",
    // The agent pod meets the "restricted" Pod Security Standard; enforcing it keeps it so.
    metadata: { name: namespace, labels: { ...LABELS, "pod-security.kubernetes.io/enforce": "restricted" } },
  };
  const account: V1ServiceAccount = { apiVersion: "v1", kind: "ServiceAccount", metadata: meta(), automountServiceAccountToken: true };
  const role: V1ClusterRole = {
    apiVersion: `${RBAC_GROUP}/v1`,
    kind: "ClusterRole",
    metadata: { name: AGENT_NAME, labels: { ...LABELS } },
    rules: policyRules(AGENT_RULES),
  };
  const binding: V1ClusterRoleBinding = {
    apiVersion: `${RBAC_GROUP}/v1`,
    kind: "ClusterRoleBinding",
    metadata: { name: AGENT_NAME, labels: { ...LABELS } },
    roleRef: { apiGroup: RBAC_GROUP, kind: "ClusterRole", name: AGENT_NAME },
    subjects: [{ kind: "ServiceAccount", name: AGENT_NAME, namespace }],
  };
  const leaseRole: V1Role = { apiVersion: `${RBAC_GROUP}/v1`, kind: "Role", metadata: meta(), rules: policyRules(AGENT_NAMESPACE_RULES) };
  const leaseBinding: V1RoleBinding = {
    apiVersion: `${RBAC_GROUP}/v1`,
    kind: "RoleBinding",
    metadata: meta(),
    roleRef: { apiGroup: RBAC_GROUP, kind: "Role", name: AGENT_NAME },
    subjects: [{ kind: "ServiceAccount", name: AGENT_NAME, namespace }],
  };
  const secret: V1Secret = {
    apiVersion: "v1",
    kind: "Secret",
    metadata: meta(),
    type: "Opaque",
    stringData: { [SECRET_KEYS.apiUrl]: options.apiUrl, [SECRET_KEYS.token]: options.token },
  };
  const fromSecret = (key: string) => ({ name: key, valueFrom: { secretKeyRef: { name: AGENT_NAME, key } } });
  const deployment: V1Deployment = {
    apiVersion: "apps/v1",
    kind: "Deployment",
    metadata: meta(),
    spec: {
      replicas: 1,
      // Two agents reconciling one cluster would fight over the same pods: the old pod is gone
      // before the new one starts (a rollout leaves a short gap; workloads keep running meanwhile).
      strategy: { type: "Recreate" },
      selector: { matchLabels: { ...SELECTOR } },
      template: {
        metadata: { labels: { ...LABELS } },
        spec: {
          serviceAccountName: AGENT_NAME,
          // In-cluster configuration reads the mounted ServiceAccount token.
          automountServiceAccountToken: true,
          enableServiceLinks: false,
          securityContext: {
            runAsNonRoot: true,
            runAsUser: NON_ROOT_ID,
            runAsGroup: NON_ROOT_ID,
            seccompProfile: { type: "RuntimeDefault" },
          },
          containers: [
            {
              name: "agent",
              image,
              command: ["berth", "agent"],
              env: [
                fromSecret(SECRET_KEYS.apiUrl),
                fromSecret(SECRET_KEYS.token),
                // The namespace project NetworkPolicies let reach engines and routers (src/cli/agent.ts).
                { name: "POD_NAMESPACE", valueFrom: { fieldRef: { fieldPath: "metadata.namespace" } } },
              ],
              resources: { requests: { cpu: "100m", memory: "128Mi" }, limits: { memory: "512Mi" } },
              securityContext: {
                readOnlyRootFilesystem: true,
                runAsNonRoot: true,
                allowPrivilegeEscalation: false,
                capabilities: { drop: ["ALL"] },
              },
              // The root filesystem is read-only; tsx keeps its compile cache under the temp directory.
              volumeMounts: [{ name: "tmp", mountPath: "/tmp" }],
            },
          ],
          volumes: [{ name: "tmp", emptyDir: { sizeLimit: "64Mi" } }],
        },
      },
    },
  };
  return [ns, account, role, binding, leaseRole, leaseBinding, secret, deployment];
}

const HEADER = [
  " berth agent install manifests, generated by k8s/manifests/agent-install.ts: do not edit.",
  " Regenerate: UPDATE_GOLDEN=1 npx vitest run test/k8s/manifests",
  ` Replace ${PLACEHOLDER_API_URL} and ${PLACEHOLDER_TOKEN} in the Secret, or print a filled-in copy:`,
  "   berth agent install --print --api URL --token ba_… | kubectl apply -f -",
].join("\n");

/** Comment lines of at most about 96 characters, each with yaml's leading-space convention. */
export function wrapComment(text: string): string {
  const lines: string[] = [];
  for (const word of text.split(" ")) {
    const last = lines.length - 1;
    if (last >= 0 && lines[last]!.length + word.length < 96) lines[last] += ` ${word}`;
    else lines.push(` ${word}`);
  }
  return lines.join("\n");
}

/** Multi-document YAML in apply order; the ClusterRole's and Role's rules carry their reasons as comments. */
export function agentInstallYaml(objects: readonly AgentInstallObject[], options: { header?: boolean } = {}): string {
  return objects
    .map((object, index) => {
      const doc = new Document(object, { aliasDuplicateObjects: false });
      const rules = object.kind === "ClusterRole" ? AGENT_RULES : object.kind === "Role" ? AGENT_NAMESPACE_RULES : undefined;
      if (rules) {
        rules.forEach((rule, i) => {
          const node = doc.getIn(["rules", i], true) as { commentBefore?: string } | undefined;
          if (node) node.commentBefore = wrapComment(rule.why);
        });
      }
      if (index === 0 && options.header) doc.commentBefore = HEADER;
      return doc.toString({ lineWidth: 0 });
    })
    .join("---\n");
}

/** The committed k8s/manifests/berth-agent.yaml: the default image and namespace, placeholders for the credential. */
export function renderPlaceholderYaml(): string {
  return agentInstallYaml(renderAgentInstall({ apiUrl: PLACEHOLDER_API_URL, token: PLACEHOLDER_TOKEN }), { header: true });
}
