// The agent's token confined, as scenarios that run unchanged against any cluster: the
// simulated one (test/k8s/sim/authorization.test.ts) and a real kube-apiserver
// (test/real-cluster/confinement.test.ts), so the two are held to the same answers. The admin
// installs the agent's ClusterRole and binding (AGENT_RULES) and
// deploy/agent/base/admission-policy.yaml, `kubectl create token` mints the agent
// ServiceAccount's token, and as that token the admission policy refuses what RBAC would allow
// (kube-system, token Secrets, unlabelled objects, privileged pods) while RBAC refuses verbs the
// ClusterRole lacks. kubectl 1.32 talks to both over HTTPS (it sends bearer tokens only over TLS).
import * as k8s from "@kubernetes/client-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { stringify } from "yaml";
import { agentInstallYaml, renderAgentInstall } from "../../k8s/manifests/agent-install.ts";
import { aDeployment } from "../fixtures/deployment-builder.ts";
import { render } from "../k8s/sim/support.ts";

const POLICY = new URL("../../deploy/agent/base/admission-policy.yaml", import.meta.url);
const AGENT = "system:serviceaccount:berth-system:berth-agent";
const MANAGED = { "app.kubernetes.io/managed-by": "berth-agent" };
const DENIED = "ValidatingAdmissionPolicy 'berth-agent-confinement' with binding 'berth-agent-confinement' denied request";

export interface KubectlRun {
  code: number;
  stdout: string;
  stderr: string;
}

/** What the scenarios need of a cluster. */
export interface ConfinementCluster {
  /** kubectl as the admin unless another kubeconfig is given; never throws on a non-zero exit. */
  kubectl(args: readonly string[], options?: { kubeconfig?: string; input?: string }): Promise<KubectlRun>;
  /** A kubeconfig file carrying a bearer token. */
  tokenKubeconfig(name: string, token: string): string;
  /** client-node configured with a bearer token. */
  tokenKubeConfig(token: string): k8s.KubeConfig;
  adminKubeConfig: k8s.KubeConfig;
  /** What a ServiceAccount token of this cluster looks like. */
  tokenPattern: RegExp;
  stop(): Promise<void>;
}

/** `idleImage`: an image whose pods need not run (the simulated cluster starts no process for it). */
export function describeAgentConfinement(idleImage: string, start: () => Promise<ConfinementCluster>): void {
  let c: ConfinementCluster;
  let agentKubeconfig: string;
  let agentToken: string;

  const kubectl = (args: string[], options: { kubeconfig?: string; input?: string } = {}) => c.kubectl(args, options);
  const asAgent = (args: string[], input?: string) => kubectl(args, { kubeconfig: agentKubeconfig, input });
  async function admin(args: string[], input?: string): Promise<string> {
    const run = await kubectl(args, { input });
    if (run.code !== 0) throw new Error(`kubectl ${args.join(" ")}: ${run.stderr}`);
    return run.stdout;
  }
  /**
   * A real apiserver starts enforcing a new policy or binding when its informers see them, a
   * moment after the write: retry a server-side dry run until `refused` holds.
   */
  async function untilEnforced(what: string, dryRun: () => Promise<KubectlRun>, refused: (run: KubectlRun) => boolean): Promise<void> {
    const deadline = Date.now() + 20_000;
    for (;;) {
      const run = await dryRun();
      if (refused(run)) return;
      if (Date.now() > deadline) throw new Error(`${what} not enforced after 20 s: ${run.stdout}${run.stderr}`);
      await new Promise((resolve) => setTimeout(resolve, 250));
    }
  }
  const pod = (namespace: string, name: string, spec: object = {}, labels: Record<string, string> = MANAGED) =>
    JSON.stringify({
      apiVersion: "v1",
      kind: "Pod",
      metadata: { name, namespace, labels },
      spec: { containers: [{ name: "main", image: idleImage }], ...spec },
    });

  beforeAll(async () => {
    c = await start();
    // The agent's namespace, ServiceAccount, ClusterRole and ClusterRoleBinding as the install renders them.
    const install = renderAgentInstall({ apiUrl: "http://127.0.0.1:1", token: "x" }).filter((o) => ["Namespace", "ServiceAccount", "ClusterRole", "ClusterRoleBinding"].includes(o.kind!));
    await admin(["apply", "-f", "-"], agentInstallYaml(install));
    await admin(["apply", "-f", POLICY.pathname]);
    await admin(["apply", "-f", "-"], JSON.stringify({ apiVersion: "v1", kind: "Namespace", metadata: { name: "berth-x", labels: { ...MANAGED, "pod-security.kubernetes.io/enforce": "baseline" } } }));
    // A berth namespace an admin relabelled privileged: Pod Security admits anything there, so
    // the policy alone has to refuse the agent's privileged pods (a real apiserver's PodSecurity
    // plugin refuses them in berth-x before the policy is asked).
    await admin(["apply", "-f", "-"], JSON.stringify({ apiVersion: "v1", kind: "Namespace", metadata: { name: "berth-open", labels: { "pod-security.kubernetes.io/enforce": "privileged" } } }));
    agentToken = (await admin(["create", "token", "berth-agent", "-n", "berth-system", "--duration", "1h"])).trim();
    agentKubeconfig = c.tokenKubeconfig("agent", agentToken);
    await untilEnforced("the confinement policy", () => asAgent(["create", "--dry-run=server", "-f", "-"], pod("kube-system", "probe")), (run) => run.stderr.includes(DENIED));
  }, 600_000);
  afterAll(async () => {
    await c?.stop();
  });

  it("the agent's token authenticates as its ServiceAccount", async () => {
    expect(agentToken).toMatch(c.tokenPattern);
    // A verb outside the ClusterRole: the 403 names the user the token authenticated as.
    const run = await asAgent(["get", "leases", "-n", "berth-system"]);
    expect(run.stderr.trim()).toBe(
      `Error from server (Forbidden): leases.coordination.k8s.io is forbidden: User "${AGENT}" cannot list resource "leases" in API group "coordination.k8s.io" in the namespace "berth-system"`,
    );
  });

  describe("the agent's token", () => {
    it("may create a labelled pod in a berth-* namespace", async () => {
      const run = await asAgent(["create", "-f", "-"], pod("berth-x", "engine-0"));
      expect(run.stderr).toBe("");
      expect(run.stdout.trim()).toBe("pod/engine-0 created");
    });

    it("may not create a pod in kube-system (the policy)", async () => {
      const run = await asAgent(["create", "-f", "-"], pod("kube-system", "intruder"));
      expect(run.code).not.toBe(0);
      expect(run.stderr.trim()).toBe(
        `Error from server (Forbidden): error when creating "STDIN": pods "intruder" is forbidden: ${DENIED}: the berth agent may write only in berth-* project namespaces, not in kube-system`,
      );
    });

    it("may not create a service-account-token Secret in berth-x (the policy)", async () => {
      const secret = {
        apiVersion: "v1",
        kind: "Secret",
        metadata: { name: "minted", namespace: "berth-x", labels: MANAGED, annotations: { "kubernetes.io/service-account.name": "default" } },
        type: "kubernetes.io/service-account-token",
      };
      const run = await asAgent(["create", "-f", "-"], JSON.stringify(secret));
      expect(run.stderr).toContain(`secrets "minted" is forbidden: ${DENIED}: the berth agent may create only Opaque Secrets, not kubernetes.io/service-account-token`);
    });

    it.each([
      ["an unlabelled pod", pod("berth-open", "foreign", {}, {}), "may write only objects labelled app.kubernetes.io/managed-by=berth-agent"],
      ["a hostNetwork pod", pod("berth-open", "host-net", { hostNetwork: true }), "may not create privileged pods"],
      [
        "a privileged container",
        pod("berth-open", "priv", { containers: [{ name: "main", image: idleImage, securityContext: { privileged: true } }] }),
        "may not create privileged pods",
      ],
      [
        "a hostPath volume",
        pod("berth-open", "host-path", { volumes: [{ name: "root", hostPath: { path: "/" } }] }),
        "may not create privileged pods",
      ],
      [
        "a namespace not named berth-*",
        JSON.stringify({ apiVersion: "v1", kind: "Namespace", metadata: { name: "tenant", labels: { ...MANAGED, "pod-security.kubernetes.io/enforce": "baseline" } } }),
        "may manage only namespaces named berth-*, not tenant",
      ],
      [
        "a privileged berth-* namespace",
        JSON.stringify({ apiVersion: "v1", kind: "Namespace", metadata: { name: "berth-priv", labels: { ...MANAGED, "pod-security.kubernetes.io/enforce": "privileged" } } }),
        "must carry pod-security.kubernetes.io/enforce",
      ],
      [
        "a berth-* namespace without a Pod Security label",
        JSON.stringify({ apiVersion: "v1", kind: "Namespace", metadata: { name: "berth-bare", labels: MANAGED } }),
        "must carry pod-security.kubernetes.io/enforce",
      ],
    ])("may not create %s (the policy)", async (_, manifest, message) => {
      const run = await asAgent(["create", "-f", "-"], manifest);
      expect(run.code).not.toBe(0);
      expect(run.stderr).toContain(DENIED);
      expect(run.stderr).toContain(message);
    });

    it("may create a labelled berth-* namespace that enforces a Pod Security Standard", async () => {
      const ns = { apiVersion: "v1", kind: "Namespace", metadata: { name: "berth-y", labels: { ...MANAGED, "pod-security.kubernetes.io/enforce": "restricted" } } };
      const run = await asAgent(["apply", "--server-side", "-f", "-"], JSON.stringify(ns));
      expect(run.stderr).toBe("");
      expect(run.stdout.trim()).toBe("namespace/berth-y serverside-applied");
    });

    it("may not update pods nor delete namespaces (RBAC)", async () => {
      const update = await asAgent(["replace", "-f", "-"], pod("berth-x", "engine-0"));
      expect(update.stderr).toContain(
        `pods "engine-0" is forbidden: User "${AGENT}" cannot update resource "pods" in API group "" in the namespace "berth-x"`,
      );
      const remove = await asAgent(["delete", "namespace", "berth-x"]);
      expect(remove.stderr.trim()).toBe(
        `Error from server (Forbidden): namespaces "berth-x" is forbidden: User "${AGENT}" cannot delete resource "namespaces" in API group "" in the namespace "berth-x"`,
      );
      const nodes = await asAgent(["get", "node", "gpu-a"]);
      expect(nodes.stderr.trim()).toBe(`Error from server (Forbidden): nodes "gpu-a" is forbidden: User "${AGENT}" cannot get resource "nodes" in API group "" at the cluster scope`);
    });

    it("may read Secrets cluster-wide, kube-system's too: reads are RBAC's alone and AGENT_RULES grants list/watch on secrets everywhere", async () => {
      await admin(["create", "secret", "generic", "cloud-credentials", "-n", "kube-system", "--from-literal=key=s3cr3t"]);
      const run = await asAgent(["get", "secrets", "-n", "kube-system", "-o", "json"]);
      expect(run.code).toBe(0);
      expect(JSON.parse(run.stdout).items.map((s: { metadata: { name: string } }) => s.metadata.name)).toContain("cloud-credentials");
      const get = await asAgent(["get", "secret", "cloud-credentials", "-n", "kube-system"]);
      expect(get.stderr).toContain(`cannot get resource "secrets" in API group "" in the namespace "kube-system"`);
    });

    it("is refused a watch the ClusterRole does not grant, through client-node", async () => {
      const kc = c.tokenKubeConfig(agentToken);
      const events: string[] = [];
      const failure = await new Promise<unknown>((resolve) => {
        void new k8s.Watch(kc)
          .watch("/apis/coordination.k8s.io/v1/namespaces/berth-system/leases", {}, (type) => events.push(type), resolve)
          .catch(resolve);
      });
      expect(events).toEqual([]);
      expect(String((failure as Error).message ?? failure)).toMatch(/403|Forbidden/);
      // A watch the ClusterRole grants opens and delivers.
      const seen = await new Promise<string>((resolve, reject) => {
        void new k8s.Watch(kc)
          .watch("/api/v1/namespaces/berth-x/pods", {}, (type, object: k8s.V1Pod) => resolve(`${type} ${object.metadata?.name}`), reject)
          .then((request) => setTimeout(() => request.abort(), 5_000).unref())
          .catch(reject);
      });
      expect(seen).toBe("ADDED engine-0");
    });

    it("may apply what the agent renders (SSA: the namespace with its Pod Security labels, pods, Services, the router's objects), but not a namespace stripped of them", async () => {
      const kc = c.tokenKubeConfig(agentToken);
      const objects = k8s.KubernetesObjectApi.makeApiClient(kc);
      const applyAsAgent = (object: object) => objects.patch(object as k8s.KubernetesObject, undefined, undefined, "berth-agent", true, k8s.PatchStrategy.ServerSideApply);
      const rendered = render(aDeployment().epd().router("builtin").build(), "demo");
      const { "pod-security.kubernetes.io/enforce": enforced, ...unenforced } = rendered.namespace.metadata!.labels!;
      expect(enforced).toBe("baseline");
      const refused = await applyAsAgent({ ...rendered.namespace, metadata: { ...rendered.namespace.metadata, labels: unenforced } }).catch((error: unknown) => error);
      expect((refused as k8s.ApiException<string>).code).toBe(403);
      expect(JSON.parse((refused as k8s.ApiException<string>).body).message).toBe(
        `namespaces "berth-demo" is forbidden: ${DENIED}: a berth namespace must carry pod-security.kubernetes.io/enforce set to baseline or restricted`,
      );
      await applyAsAgent(rendered.namespace);
      const everything = [...rendered.claims, ...rendered.services, ...rendered.routerObjects, ...rendered.pods];
      expect(everything.length).toBeGreaterThan(5);
      for (const object of everything) await applyAsAgent(object);
      const pods = await kc.makeApiClient(k8s.CoreV1Api).listNamespacedPod({ namespace: "berth-demo" });
      const names = pods.items.map((p) => p.metadata?.name);
      for (const pod of rendered.pods) expect(names).toContain(pod.metadata!.name);
    });

    it("an unknown token is 401, and the agent's token dies with its ServiceAccount", async () => {
      const stranger = c.tokenKubeconfig("stranger", "not-issued-by-this-cluster");
      const unknown = await kubectl(["get", "pods", "-n", "berth-x"], { kubeconfig: stranger });
      expect(unknown.stderr).toContain("error: You must be logged in to the server (Unauthorized)");
      await admin(["delete", "serviceaccount", "berth-agent", "-n", "berth-system"]);
      // kube-apiserver remembers a token it authenticated for 10 s: allow it that long.
      const deadline = Date.now() + 20_000;
      let after = await asAgent(["get", "pods", "-n", "berth-x"]);
      while (after.code === 0 && Date.now() < deadline) {
        await new Promise((resolve) => setTimeout(resolve, 500));
        after = await asAgent(["get", "pods", "-n", "berth-x"]);
      }
      expect(after.stderr).toContain("error: You must be logged in to the server (Unauthorized)");
    });
  });

  describe("TokenRequest", () => {
    it("refuses an expiration under ten minutes as kube-apiserver does", async () => {
      await admin(["create", "serviceaccount", "short", "-n", "default"]);
      const run = await kubectl(["create", "token", "short", "-n", "default", "--duration", "60s"]);
      expect(run.stderr.trim()).toBe(
        'error: failed to create token: TokenRequest.authentication.k8s.io "" is invalid: spec.expirationSeconds: Invalid value: 60: may not specify a duration less than 10 minutes',
      );
    });

    it("is refused to a token without create on serviceaccounts/token (RBAC)", async () => {
      const other = (await admin(["create", "token", "short", "-n", "default"])).trim();
      const kubeconfig = c.tokenKubeconfig("short", other);
      const run = await kubectl(["create", "token", "short", "-n", "default"], { kubeconfig });
      expect(run.stderr.trim()).toBe(
        'error: failed to create token: serviceaccounts "short" is forbidden: User "system:serviceaccount:default:short" cannot create resource "serviceaccounts/token" in API group "" in the namespace "default"',
      );
    });
  });

  describe("admission for every user", () => {
    const keepProtected = [
      {
        apiVersion: "admissionregistration.k8s.io/v1",
        kind: "ValidatingAdmissionPolicy",
        metadata: { name: "keep-protected" },
        spec: {
          matchConstraints: { resourceRules: [{ apiGroups: [""], apiVersions: ["v1"], operations: ["DELETE", "CREATE"], resources: ["configmaps"] }] },
          validations: [
            { expression: "request.operation != 'DELETE' || oldObject.metadata.?labels[?'protected'].orValue('') != 'true'", message: "protected", reason: "Forbidden" },
            { expression: "request.operation != 'CREATE' || has(object.data)", message: "a ConfigMap without data" },
          ],
        },
      },
      { apiVersion: "admissionregistration.k8s.io/v1", kind: "ValidatingAdmissionPolicyBinding", metadata: { name: "keep-protected-deny" }, spec: { policyName: "keep-protected", validationActions: ["Deny"], matchResources: { namespaceSelector: { matchLabels: { "kubernetes.io/metadata.name": "policy-deny" } } } } },
      { apiVersion: "admissionregistration.k8s.io/v1", kind: "ValidatingAdmissionPolicyBinding", metadata: { name: "keep-protected-warn" }, spec: { policyName: "keep-protected", validationActions: ["Warn"], matchResources: { namespaceSelector: { matchLabels: { "kubernetes.io/metadata.name": "policy-warn" } } } } },
    ];

    it("deletecollection is admitted object by object, and one refusal deletes nothing", async () => {
      await admin(["apply", "-f", "-"], keepProtected.map((o) => stringify(o)).join("---\n"));
      await admin(["create", "namespace", "policy-deny"]);
      const empty = JSON.stringify({ apiVersion: "v1", kind: "ConfigMap", metadata: { name: "probe", namespace: "policy-deny" } });
      await untilEnforced("keep-protected", () => kubectl(["create", "--dry-run=server", "-f", "-"], { input: empty }), (run) => run.stderr.includes("a ConfigMap without data"));
      await admin(["create", "configmap", "plain", "-n", "policy-deny", "--from-literal=a=1"]);
      await admin(["create", "configmap", "kept", "-n", "policy-deny", "--from-literal=a=1"]);
      await admin(["label", "configmap", "kept", "-n", "policy-deny", "protected=true"]);
      const core = c.adminKubeConfig.makeApiClient(k8s.CoreV1Api);
      const refused = await core.deleteCollectionNamespacedConfigMap({ namespace: "policy-deny" }).catch((error: unknown) => error);
      expect((refused as k8s.ApiException<string>).code).toBe(403);
      expect(JSON.parse((refused as k8s.ApiException<string>).body).message).toBe(
        // Each object of a deletecollection is admitted without its name, so the refusal names "Unknown".
        `configmaps "Unknown" is forbidden: ValidatingAdmissionPolicy 'keep-protected' with binding 'keep-protected-deny' denied request: protected`,
      );
      const left = await core.listNamespacedConfigMap({ namespace: "policy-deny" });
      expect(left.items.map((c) => c.metadata?.name).filter((n) => n !== "kube-root-ca.crt").sort()).toEqual(["kept", "plain"]);
    });

    it("a Warn binding prints kubectl's Warning and admits", async () => {
      await admin(["create", "namespace", "policy-warn"]);
      const run = await kubectl(["create", "-f", "-"], { input: JSON.stringify({ apiVersion: "v1", kind: "ConfigMap", metadata: { name: "empty", namespace: "policy-warn" } }) });
      expect(run.code).toBe(0);
      expect(run.stderr.trim()).toBe("Warning: Validation failed for ValidatingAdmissionPolicy 'keep-protected' with binding 'keep-protected-warn': a ConfigMap without data");
      expect(run.stdout.trim()).toBe("configmap/empty created");
    });
  });
}
