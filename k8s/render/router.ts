// The deployment's router: a Deployment, its Service (named after the deployment: the front
// door), and a ConfigMap with the router's wiring. Three kinds (docs/design.md §5, §6):
//   builtin         `berth router`; the agent pushes endpoints over its admin API (token from a Secret file)
//   vllm-router     discovers engine pods itself through the Kubernetes API (pods get/list/watch)
//   sglang-gateway  the Shepherd Model Gateway (`smg`), the same way
// Both external routers bind 127.0.0.1 (vllm-router) or may in some versions, so every kind
// is told `--host 0.0.0.0`. External routers select pods labelled `berth.dev/serving=true`:
// flipping that label withdraws a pod from them (and from the role Service) without a restart.
import type { V1ConfigMap, V1Container, V1Deployment, V1Role, V1RoleBinding, V1Service, V1ServiceAccount } from "@kubernetes/client-node";
import type { DeploymentSpec } from "../../src/domain/deployment-spec.ts";
import {
  CONTAINER_SECURITY,
  LABELS,
  MANAGED_BY,
  namespaceName,
  POD_SECURITY,
  resolveOptions,
  roleServiceName,
  routerName,
  routerServiceName,
  serviceHost,
} from "./names.ts";
import { canonicalJson, fnv1a64, RENDER_VERSION } from "./spec-hash.ts";
import type { RenderInput, ResolvedOptions, RouterObject } from "./types.ts";

type RouterSpec = NonNullable<DeploymentSpec["router"]>;
type Policy = RouterSpec["policy"];

/** berth's policy names in each external router's vocabulary (closest equivalent where none matches). */
export const EXTERNAL_POLICIES: Readonly<Record<"vllm-router" | "sglang-gateway", Readonly<Record<Policy, string>>>> = {
  // vllm-router has no least-load policy: power_of_two picks the less loaded of two.
  "vllm-router": { round_robin: "round_robin", least_load: "power_of_two", cache_aware: "cache_aware", session_affinity: "consistent_hash" },
  // least_load exists only in recent smg releases; power_of_two is in every one.
  "sglang-gateway": { round_robin: "round_robin", least_load: "power_of_two", cache_aware: "cache_aware", session_affinity: "consistent_hashing" },
};

export const ADMIN_TOKEN_DIR = "/etc/berth/router-admin";
export const ROUTER_CONFIG_DIR = "/etc/berth/router";

function routerLabels(input: RenderInput): Record<string, string> {
  return {
    [LABELS.managedBy]: MANAGED_BY,
    [LABELS.deployment]: input.deployment.name,
    [LABELS.deploymentId]: input.deployment.id,
    [LABELS.component]: "router",
  };
}

/** The wiring the router runs with: stored in the ConfigMap (for the agent and for people) and hashed. */
export function routerConfig(input: RenderInput, options: ResolvedOptions) {
  const { deployment } = input;
  const { spec } = deployment;
  const router = spec.router!;
  const ns = namespaceName(deployment.projectName);
  return {
    deploymentId: deployment.id,
    kind: router.kind,
    policy: router.policy,
    engine: spec.engine.name,
    port: options.routerPort,
    disaggregated: spec.roles.some((r) => r.kind !== "server"),
    roles: spec.roles.map((role) => ({
      name: role.name,
      kind: role.kind,
      service: serviceHost(roleServiceName(deployment.name, role.name), ns, options.clusterDomain),
      port: options.enginePort,
      selector: { [LABELS.deploymentId]: deployment.id, [LABELS.role]: role.name, [LABELS.serving]: "true" },
    })),
  };
}

const selectorArgs = (selector: Record<string, string>) => Object.entries(selector).map(([k, v]) => `${k}=${v}`);

function routerContainer(input: RenderInput, options: ResolvedOptions, config: ReturnType<typeof routerConfig>): V1Container {
  const { spec } = input.deployment;
  const router = spec.router!;
  const ns = namespaceName(input.deployment.projectName);
  const port = String(options.routerPort);
  const common = {
    ports: [{ name: "http", containerPort: options.routerPort, protocol: "TCP" }],
    resources: { requests: { cpu: "250m", memory: "256Mi" } },
    securityContext: structuredClone(CONTAINER_SECURITY),
  };
  if (router.kind === "builtin") {
    const secret = options.routerAdminTokenSecret;
    const health = () => ({ httpGet: { path: "/admin/health", port: "http" }, timeoutSeconds: 3 });
    return {
      name: "router",
      image: options.routerImage,
      imagePullPolicy: "IfNotPresent",
      command: ["berth", "router"],
      args: [
        "--host",
        "0.0.0.0",
        "--port",
        port,
        "--admin-token-file",
        `${ADMIN_TOKEN_DIR}/${secret.key}`,
        "--policy",
        router.policy,
        "--engine",
        spec.engine.name,
      ],
      env: [{ name: "BERTH_POD_IP", valueFrom: { fieldRef: { fieldPath: "status.podIP" } } }],
      ...common,
      volumeMounts: [
        { name: "admin-token", mountPath: ADMIN_TOKEN_DIR, readOnly: true },
        { name: "config", mountPath: ROUTER_CONFIG_DIR, readOnly: true },
      ],
      readinessProbe: { ...health(), periodSeconds: 5, failureThreshold: 3 },
      livenessProbe: { ...health(), periodSeconds: 15, failureThreshold: 4 },
    };
  }
  const selectors = config.roles.filter((r) => r.kind === "server" || r.kind === "prefill" || r.kind === "decode");
  const selectorOf = (kind: string) => selectorArgs(selectors.find((r) => r.kind === kind)!.selector);
  const discovery = [
    "--service-discovery",
    "--service-discovery-namespace",
    ns,
    "--service-discovery-port",
    String(options.enginePort),
    ...(config.disaggregated
      ? [router.kind === "vllm-router" ? "--vllm-pd-disaggregation" : "--pd-disaggregation", "--prefill-selector", ...selectorOf("prefill"), "--decode-selector", ...selectorOf("decode")]
      : ["--selector", ...selectorOf("server")]),
  ];
  const health = () => ({ httpGet: { path: "/health", port: "http" }, timeoutSeconds: 3 });
  const args = ["--host", "0.0.0.0", "--port", port, "--policy", EXTERNAL_POLICIES[router.kind][router.policy], ...discovery];
  if (router.kind === "vllm-router") args.push("--prometheus-host", "0.0.0.0"); // it defaults to 127.0.0.1
  return {
    name: "router",
    image: router.kind === "vllm-router" ? options.vllmRouterImage : options.sglangGatewayImage,
    imagePullPolicy: "IfNotPresent",
    command: [router.kind === "vllm-router" ? "vllm-router" : "smg"],
    args,
    ...common,
    volumeMounts: [{ name: "config", mountPath: ROUTER_CONFIG_DIR, readOnly: true }],
    readinessProbe: { ...health(), periodSeconds: 5, failureThreshold: 3 },
    livenessProbe: { ...health(), periodSeconds: 15, failureThreshold: 4 },
  };
}

/** Router objects of the deployment; empty when `spec.router` is absent. */
export function renderRouterObjects(input: RenderInput): RouterObject[] {
  const { deployment } = input;
  const router = deployment.spec.router;
  if (!router) return [];
  const options = resolveOptions(deployment.spec, deployment.name, input.options);
  const ns = namespaceName(deployment.projectName);
  const name = routerName(deployment.name);
  const labels = routerLabels(input);
  const config = routerConfig(input, options);
  const configText = JSON.stringify(config, null, 2) + "\n";
  const container = routerContainer(input, options, config);
  const external = router.kind !== "builtin";
  // Replicas are a count the Deployment changes in place; everything else rolls the pods.
  const hash = fnv1a64(canonicalJson({ renderVersion: RENDER_VERSION, config, container }));
  const selector = { [LABELS.deploymentId]: deployment.id, [LABELS.component]: "router" };

  const configMap: V1ConfigMap = {
    apiVersion: "v1",
    kind: "ConfigMap",
    metadata: { name, namespace: ns, labels },
    data: { "router.json": configText },
  };
  const volumes = [
    { name: "config", configMap: { name } },
    ...(router.kind === "builtin"
      ? [
          {
            name: "admin-token",
            secret: { secretName: options.routerAdminTokenSecret.name, items: [{ key: options.routerAdminTokenSecret.key, path: options.routerAdminTokenSecret.key }] },
          },
        ]
      : []),
  ];
  const workload: V1Deployment = {
    apiVersion: "apps/v1",
    kind: "Deployment",
    metadata: { name, namespace: ns, labels: { ...labels, [LABELS.specHash]: hash } },
    spec: {
      replicas: router.replicas,
      selector: { matchLabels: selector },
      // Never below the declared router count while a new template rolls out.
      strategy: { type: "RollingUpdate", rollingUpdate: { maxUnavailable: 0, maxSurge: 1 } },
      template: {
        metadata: { labels: { ...labels, [LABELS.specHash]: hash } },
        spec: {
          ...(external ? { serviceAccountName: name } : { automountServiceAccountToken: false }),
          enableServiceLinks: false,
          securityContext: structuredClone(POD_SECURITY),
          terminationGracePeriodSeconds: 30,
          containers: [container],
          volumes,
        },
      },
    },
  };
  const service: V1Service = {
    apiVersion: "v1",
    kind: "Service",
    metadata: { name: routerServiceName(deployment.name), namespace: ns, labels },
    spec: {
      type: "ClusterIP",
      selector,
      ports: [{ name: "http", port: options.routerPort, targetPort: "http", protocol: "TCP" }],
    },
  };
  const objects: RouterObject[] = [configMap, workload, service];
  if (external) {
    const account: V1ServiceAccount = { apiVersion: "v1", kind: "ServiceAccount", metadata: { name, namespace: ns, labels } };
    const role: V1Role = {
      apiVersion: "rbac.authorization.k8s.io/v1",
      kind: "Role",
      metadata: { name, namespace: ns, labels },
      rules: [{ apiGroups: [""], resources: ["pods"], verbs: ["get", "list", "watch"] }],
    };
    const binding: V1RoleBinding = {
      apiVersion: "rbac.authorization.k8s.io/v1",
      kind: "RoleBinding",
      metadata: { name, namespace: ns, labels },
      subjects: [{ kind: "ServiceAccount", name, namespace: ns }],
      roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "Role", name },
    };
    objects.push(account, role, binding);
  }
  // No object shares a sub-object with another: callers may edit what they get.
  return objects.map((object) => structuredClone(object));
}
