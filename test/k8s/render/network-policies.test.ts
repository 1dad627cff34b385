// Tenant isolation as rendered (docs/design.md §13.5): Pod Security labels on the namespace,
// hardened pods, and NetworkPolicies judged by a small evaluator of Kubernetes' NetworkPolicy
// semantics (a pod selected by no policy of a type is open for it; selected ones accept only what
// some rule allows), over a table of who may reach whom on which port.
import type { V1LabelSelector, V1NetworkPolicy, V1NetworkPolicyPeer, V1NetworkPolicyPort } from "@kubernetes/client-node";
import { describe, expect, it } from "vitest";
import {
  BLOCKED_RANGES,
  exceptionsWithin,
  isIpv4Cidr,
  LABELS,
  PORTS,
  renderDeployment,
  type RenderInput,
  type RenderOptions,
} from "../../../k8s/render/index.ts";
import { aDeployment } from "../../fixtures/deployment-builder.ts";
import { inputFor, OPTIONS, SHAPES } from "./support.ts";

interface Endpoint {
  namespace?: string;
  labels?: Record<string, string>;
  /** For destinations outside the cluster (or addresses matched by ipBlock only). */
  ip?: string;
}

function matchesSelector(selector: V1LabelSelector, labels: Record<string, string>): boolean {
  for (const [key, value] of Object.entries(selector.matchLabels ?? {})) if (labels[key] !== value) return false;
  for (const e of selector.matchExpressions ?? []) {
    const has = key(e.key, labels);
    if (e.operator === "Exists" && !has) return false;
    if (e.operator === "DoesNotExist" && has) return false;
    if (e.operator === "In" && !(e.values ?? []).includes(labels[e.key]!)) return false;
    if (e.operator === "NotIn" && (e.values ?? []).includes(labels[e.key]!)) return false;
  }
  return true;
}
const key = (k: string, labels: Record<string, string>) => k in labels;

const toInt = (ip: string) => ip.split(".").reduce((acc, o) => acc * 256 + Number(o), 0);
function inCidr(ip: string, cidr: string): boolean {
  const [base, bits] = cidr.split("/");
  const size = 2 ** (32 - Number(bits));
  const start = toInt(base!) - (toInt(base!) % size);
  return toInt(ip) >= start && toInt(ip) < start + size;
}

function peerMatches(peer: V1NetworkPolicyPeer, policyNamespace: string, other: Endpoint): boolean {
  if (peer.ipBlock) {
    if (!other.ip) return false;
    return inCidr(other.ip, peer.ipBlock.cidr) && !(peer.ipBlock.except ?? []).some((c) => inCidr(other.ip!, c));
  }
  if (other.namespace === undefined) return false;
  const namespaceOk = peer.namespaceSelector
    ? matchesSelector(peer.namespaceSelector, { "kubernetes.io/metadata.name": other.namespace })
    : other.namespace === policyNamespace;
  return namespaceOk && (!peer.podSelector || matchesSelector(peer.podSelector, other.labels ?? {}));
}

const portMatches = (ports: V1NetworkPolicyPort[] | undefined, port: number, protocol: string) =>
  !ports || ports.length === 0 || ports.some((p) => (p.protocol ?? "TCP") === protocol && (p.port === undefined || p.port === port));

function selecting(policies: V1NetworkPolicy[], pod: Endpoint, type: "Ingress" | "Egress"): V1NetworkPolicy[] {
  if (pod.namespace === undefined) return [];
  return policies.filter(
    (p) => p.metadata!.namespace === pod.namespace && (p.spec!.policyTypes ?? []).includes(type) && matchesSelector(p.spec!.podSelector ?? {}, pod.labels ?? {}),
  );
}

/** Whether `from` may open a connection to `to` on `port`: egress on from's side and ingress on to's both allow it. */
function reaches(policies: V1NetworkPolicy[], from: Endpoint, to: Endpoint, port: number, protocol = "TCP"): boolean {
  const egress = selecting(policies, from, "Egress");
  const egressOk =
    egress.length === 0 ||
    egress.some((p) => (p.spec!.egress ?? []).some((rule) => portMatches(rule.ports, port, protocol) && (rule.to ?? []).some((peer) => peerMatches(peer, p.metadata!.namespace!, to))));
  const ingress = selecting(policies, to, "Ingress");
  const ingressOk =
    ingress.length === 0 ||
    ingress.some((p) =>
      (p.spec!.ingress ?? []).some((rule) => {
        const peers = (rule as { from?: V1NetworkPolicyPeer[] }).from ?? [];
        return portMatches(rule.ports, port, protocol) && peers.some((peer) => peerMatches(peer, p.metadata!.namespace!, from));
      }),
    );
  return egressOk && ingressOk;
}

const ISOLATION: RenderOptions = { ...OPTIONS, isolation: { ingressNamespace: "gateway", agentNamespace: "berth-system" } };
const withId = (input: RenderInput, id: string): RenderInput => ({ ...input, deployment: { ...input.deployment, id } });

const a = withId(inputFor(aDeployment().name("alpha").pd().build(), ISOLATION, "team-a"), "dep_aaaaaaaaaaaaaaaaaaaa");
const b = withId(inputFor(aDeployment().name("beta").build(), ISOLATION, "team-a"), "dep_bbbbbbbbbbbbbbbbbbbb");
const c = withId(inputFor(aDeployment().name("gamma").spec({ roles: [{ name: "main", resources: { gpus: 1 }, command: ["sh", "-c", "x"] }] }).build(), ISOLATION, "team-b"), "dep_cccccccccccccccccccc");
const policies = [a, b, c].flatMap((input) => renderDeployment(input).networkPolicies);

const podOf = (input: RenderInput, role?: string): Endpoint => {
  const { pods, routerObjects } = renderDeployment(input);
  if (role === undefined) {
    const router = routerObjects.find((o) => o.kind === "Deployment") as { spec: { template: { metadata: { labels: Record<string, string> } } } };
    return { namespace: `berth-${input.deployment.projectName}`, labels: router.spec.template.metadata.labels };
  }
  const pod = pods.find((p) => p.metadata!.labels![LABELS.role] === role)!;
  return { namespace: pod.metadata!.namespace!, labels: pod.metadata!.labels! };
};

const ENDPOINTS: Record<string, Endpoint> = {
  "A prefill": podOf(a, "prefill"),
  "A decode": podOf(a, "decode"),
  "A router": podOf(a),
  "B engine (same namespace)": podOf(b, "server"),
  "C take-over (other project)": podOf(c, "main"),
  gateway: { namespace: "gateway", labels: { app: "gw" } },
  agent: { namespace: "berth-system", labels: { app: "berth-agent" } },
  "other namespace": { namespace: "default", labels: { app: "x" } },
  "kube-dns": { namespace: "kube-system", labels: { "k8s-app": "kube-dns" } },
  "cloud metadata": { ip: "169.254.169.254" },
  "Hugging Face": { ip: "18.164.174.118" },
  "node (private)": { ip: "10.0.0.12" },
};

describe("NetworkPolicies: who reaches whom", () => {
  it.each<[from: string, to: string, port: number, allowed: boolean]>([
    // A deployment's own pods reach each other on every port: engine HTTP, NIXL side channel, rendezvous, Ray.
    ["A decode", "A prefill", 8000, true],
    ["A decode", "A prefill", PORTS.vllmNixlSideChannel, true],
    ["A prefill", "A decode", PORTS.vllmMaster, true],
    ["A prefill", "A decode", PORTS.rayGcs, true],
    ["A router", "A prefill", 8000, true],
    ["A router", "A decode", 8000, true],
    // The front door: the gateway and the agent reach the router port, nothing else does.
    ["gateway", "A router", 8080, true],
    ["agent", "A router", 8080, true],
    ["other namespace", "A router", 8080, false],
    ["gateway", "A prefill", 8000, false],
    ["agent", "A prefill", 8000, true],
    ["agent", "A prefill", PORTS.rayGcs, false],
    // Another deployment of the same project cannot reach A's side ports, nor its engine port.
    ["B engine (same namespace)", "A prefill", PORTS.vllmNixlSideChannel, false],
    ["B engine (same namespace)", "A prefill", 8000, false],
    ["B engine (same namespace)", "A decode", PORTS.rayGcs, false],
    ["B engine (same namespace)", "A router", 8080, false],
    // Another project's take-over pod reaches none of A (Ray, torch rendezvous, NIXL), nor B.
    ["C take-over (other project)", "A prefill", PORTS.rayGcs, false],
    ["C take-over (other project)", "A decode", PORTS.vllmMaster, false],
    ["C take-over (other project)", "A prefill", PORTS.vllmNixlSideChannel, false],
    ["C take-over (other project)", "A prefill", 8000, false],
    ["C take-over (other project)", "B engine (same namespace)", 8000, false],
    ["C take-over (other project)", "A router", 8080, false],
    // Engines' egress: DNS and public HTTPS for weights; never the metadata address or private ranges.
    ["A prefill", "kube-dns", 53, true],
    ["A prefill", "Hugging Face", 443, true],
    ["A prefill", "Hugging Face", 80, false],
    ["C take-over (other project)", "cloud metadata", 80, false],
    ["C take-over (other project)", "cloud metadata", 443, false],
    ["C take-over (other project)", "node (private)", 443, false],
    ["C take-over (other project)", "Hugging Face", 443, true],
    // The builtin router talks to its engines only.
    ["A router", "Hugging Face", 443, false],
    ["A router", "B engine (same namespace)", 8000, false],
  ])("%s → %s:%i allowed: %s", (from, to, port, allowed) => {
    expect(reaches(policies, ENDPOINTS[from]!, ENDPOINTS[to]!, port)).toBe(allowed);
  });

  it("DNS is allowed over UDP too, only to kube-dns", () => {
    expect(reaches(policies, ENDPOINTS["A decode"]!, ENDPOINTS["kube-dns"]!, 53, "UDP")).toBe(true);
    expect(reaches(policies, ENDPOINTS["A decode"]!, ENDPOINTS["other namespace"]!, 53, "UDP")).toBe(false);
  });

  it("the evaluator has teeth: without the policies every path is open", () => {
    expect(reaches([], ENDPOINTS["C take-over (other project)"]!, ENDPOINTS["A prefill"]!, PORTS.rayGcs)).toBe(true);
  });

  it("without --ingress-namespace any namespace reaches the router port, still no side port", () => {
    const open = withId(inputFor(aDeployment().name("alpha").pd().build(), OPTIONS, "team-a"), "dep_aaaaaaaaaaaaaaaaaaaa");
    const set = renderDeployment(open).networkPolicies;
    expect(reaches(set, ENDPOINTS["other namespace"]!, podOf(open), 8080)).toBe(true);
    expect(reaches(set, ENDPOINTS["other namespace"]!, podOf(open, "prefill"), PORTS.vllmNixlSideChannel)).toBe(false);
  });

  it("without a router the ingress source reaches the engines' port (the role Service is the door)", () => {
    expect(reaches(policies, ENDPOINTS.gateway!, ENDPOINTS["B engine (same namespace)"]!, 8000)).toBe(true);
    expect(reaches(policies, ENDPOINTS.gateway!, ENDPOINTS["B engine (same namespace)"]!, PORTS.vllmMaster)).toBe(false);
  });

  it("external routers may reach the Kubernetes API for pod discovery", () => {
    const external = withId(inputFor(aDeployment().name("ext").pd().router("vllm-router").spec({ router: { kind: "vllm-router", policy: "cache_aware" } }).build(), ISOLATION, "team-a"), "dep_eeeeeeeeeeeeeeeeeeee");
    const set = renderDeployment(external).networkPolicies;
    expect(reaches(set, podOf(external), { ip: "10.96.0.1" }, 443)).toBe(true);
    expect(reaches(set, podOf(external), { ip: "10.96.0.1" }, 6379)).toBe(false);
  });

  it("every shape has the namespace's two policies and its own, labelled with its deployment and a spec hash", () => {
    for (const { input } of SHAPES) {
      const set = renderDeployment(input).networkPolicies;
      const names = set.map((p) => p.metadata!.name);
      expect(names.slice(0, 2)).toEqual(["berth-default-deny", "berth-allow-dns"]);
      expect(names).toContain(`${input.deployment.name}-engines`);
      expect(names.includes(`${input.deployment.name}-router`)).toBe(input.deployment.spec.router !== undefined);
      for (const policy of set.slice(2)) {
        expect(policy.metadata!.labels).toMatchObject({ [LABELS.managedBy]: "berth-agent", [LABELS.deploymentId]: input.deployment.id });
        expect(policy.metadata!.labels![LABELS.specHash]).toMatch(/^[0-9a-f]{16}$/);
      }
    }
  });
});

describe("model egress block", () => {
  it.each<[string, string[]]>([
    ["0.0.0.0/0", [...BLOCKED_RANGES]],
    ["10.20.0.0/16", []],
    ["10.0.0.0/8", []],
    ["0.0.0.0/1", ["10.0.0.0/8", "100.64.0.0/10"]],
    ["128.0.0.0/1", ["169.254.0.0/16", "172.16.0.0/12", "192.168.0.0/16"]],
    ["8.8.8.0/24", []],
  ])("%s excepts %j", (cidr, except) => {
    expect(exceptionsWithin(cidr)).toEqual(except);
  });

  it.each(["0.0.0.0/0", "10.1.2.3/32", "192.168.0.0/16"])("%s is an IPv4 CIDR", (cidr) => expect(isIpv4Cidr(cidr)).toBe(true));
  it.each(["", "10.0.0.0", "10.0.0.0/33", "300.0.0.0/8", "::/0", "10.0.0.0/8 "])("%j is not", (cidr) => expect(isIpv4Cidr(cidr)).toBe(false));
});

describe("Pod Security", () => {
  it("labels every project namespace: baseline enforced, restricted warned and audited", () => {
    expect(renderDeployment(a).namespace.metadata!.labels).toMatchObject({
      "pod-security.kubernetes.io/enforce": "baseline",
      "pod-security.kubernetes.io/enforce-version": "latest",
      "pod-security.kubernetes.io/warn": "restricted",
      "pod-security.kubernetes.io/audit": "restricted",
    });
  });

  it.each(SHAPES.map((s) => [s.file, s] as const))("%s: every pod and router drops all capabilities, forbids escalation, uses RuntimeDefault seccomp, mounts no token it does not need", (_file, { input }) => {
    const bundle = renderDeployment(input);
    const routers = bundle.routerObjects.filter((o) => o.kind === "Deployment").map((d) => (d as { spec: { template: { spec: object } } }).spec.template.spec);
    for (const spec of [...bundle.pods.map((p) => p.spec!), ...routers] as Array<{ securityContext?: object; containers: Array<{ securityContext?: object }>; automountServiceAccountToken?: boolean; serviceAccountName?: string; hostNetwork?: boolean }>) {
      expect(spec.securityContext).toEqual({ seccompProfile: { type: "RuntimeDefault" } });
      for (const container of spec.containers) expect(container.securityContext).toEqual({ allowPrivilegeEscalation: false, capabilities: { drop: ["ALL"] } });
      // Only an external router (pod discovery through its Role) runs with a ServiceAccount token.
      if (spec.serviceAccountName === undefined) expect(spec.automountServiceAccountToken).toBe(false);
      expect(spec.hostNetwork).toBeUndefined();
    }
  });
});
