// The agent's install manifests: every object passes the official schema of its kind, the
// committed berth-agent.yaml is exactly the placeholder render (UPDATE_GOLDEN=1 regenerates it),
// and the Deployment keeps the properties the install relies on (one agent at a time, the
// credential from the Secret under the names `berth agent` reads, a locked-down container).
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { ClusterRole } from "kubernetes-models/rbac.authorization.k8s.io/v1/ClusterRole";
import { ClusterRoleBinding } from "kubernetes-models/rbac.authorization.k8s.io/v1/ClusterRoleBinding";
import { Role } from "kubernetes-models/rbac.authorization.k8s.io/v1/Role";
import { RoleBinding } from "kubernetes-models/rbac.authorization.k8s.io/v1/RoleBinding";
import { Deployment } from "kubernetes-models/apps/v1/Deployment";
import { Namespace } from "kubernetes-models/v1/Namespace";
import { Secret } from "kubernetes-models/v1/Secret";
import { ServiceAccount } from "kubernetes-models/v1/ServiceAccount";
import { describe, expect, it } from "vitest";
import { parseAllDocuments } from "yaml";
import {
  AGENT_NAME,
  BERTH_VERSION,
  DEFAULT_IMAGE,
  DEFAULT_NAMESPACE,
  PLACEHOLDER_API_URL,
  PLACEHOLDER_TOKEN,
  renderAgentInstall,
  renderPlaceholderYaml,
} from "../../../k8s/manifests/agent-install.ts";
import { isDns1123Label, isLabelKey, isLabelValue } from "../../../src/domain/deployment-spec.ts";

const ROOT = join(import.meta.dirname, "../../..");
const COMMITTED = join(ROOT, "k8s/manifests/berth-agent.yaml");
const UPDATE = process.env.UPDATE_GOLDEN === "1";

const MODELS: Record<string, new (data: never) => { validate(): void }> = {
  "v1/Namespace": Namespace,
  "v1/ServiceAccount": ServiceAccount,
  "v1/Secret": Secret,
  "apps/v1/Deployment": Deployment,
  "rbac.authorization.k8s.io/v1/ClusterRole": ClusterRole,
  "rbac.authorization.k8s.io/v1/ClusterRoleBinding": ClusterRoleBinding,
  "rbac.authorization.k8s.io/v1/Role": Role,
  "rbac.authorization.k8s.io/v1/RoleBinding": RoleBinding,
};

function validate(object: { apiVersion?: string; kind?: string }): void {
  const Model = MODELS[`${object.apiVersion}/${object.kind}`];
  if (!Model) throw new Error(`no schema model for ${object.apiVersion}/${object.kind}`);
  new Model(structuredClone(object) as never).validate();
}

const OPTIONS = { apiUrl: "https://berth.example.com", token: "ba_0123456789abcdef" };
const objects = renderAgentInstall(OPTIONS);
// The tests read deep into plain objects; `any` keeps that legible.
const byKind = (list: readonly object[], kind: string): any => list.find((o) => (o as { kind?: string }).kind === kind);

describe("agent install objects", () => {
  it("are the eight objects, in apply order", () => {
    expect(objects.map((o) => `${o.kind}/${o.metadata!.name}`)).toEqual([
      `Namespace/${DEFAULT_NAMESPACE}`,
      `ServiceAccount/${AGENT_NAME}`,
      `ClusterRole/${AGENT_NAME}`,
      `ClusterRoleBinding/${AGENT_NAME}`,
      `Role/${AGENT_NAME}`,
      `RoleBinding/${AGENT_NAME}`,
      `Secret/${AGENT_NAME}`,
      `Deployment/${AGENT_NAME}`,
    ]);
  });

  it.each(objects.map((o) => [o.kind!, o] as const))("%s passes kubernetes-models validation", (_kind, object) => {
    expect(() => validate(object)).not.toThrow();
  });

  it("the validator has teeth: a Deployment with a string replica count is refused", () => {
    const broken = structuredClone(byKind(objects, "Deployment"));
    broken.spec.replicas = "one";
    expect(() => validate(broken)).toThrow(/replicas/);
  });

  it("names and labels are valid; namespaced objects sit in the agent's namespace, cluster-scoped ones in none", () => {
    for (const object of objects) {
      const meta = object.metadata!;
      expect(isDns1123Label(meta.name!), meta.name).toBe(true);
      for (const [key, value] of Object.entries(meta.labels ?? {})) expect(isLabelKey(key) && isLabelValue(value), `${key}=${value}`).toBe(true);
      const clusterScoped = ["Namespace", "ClusterRole", "ClusterRoleBinding"].includes(object.kind!);
      expect(meta.namespace, object.kind).toBe(clusterScoped ? undefined : DEFAULT_NAMESPACE);
    }
  });

  it("the Secret holds the API URL and token as stringData under the env names `berth agent` reads", () => {
    const secret = byKind(objects, "Secret");
    expect(secret.stringData).toEqual({ BERTH_API_URL: OPTIONS.apiUrl, BERTH_AGENT_TOKEN: OPTIONS.token });
    expect(secret.data).toBeUndefined();
    // The names are a contract with src/cli/agent.ts: it falls back to exactly these variables.
    const agentCli = readFileSync(join(ROOT, "src/cli/agent.ts"), "utf8");
    for (const key of Object.keys(secret.stringData)) expect(agentCli).toContain(`process.env.${key}`);
  });

  it("the Deployment runs one agent at a time, `berth agent` with the credential from the Secret", () => {
    const deployment = byKind(objects, "Deployment");
    expect(deployment.spec.replicas).toBe(1);
    expect(deployment.spec.strategy).toEqual({ type: "Recreate" });
    const pod = deployment.spec.template.spec;
    expect(pod.serviceAccountName).toBe(AGENT_NAME);
    expect(pod.automountServiceAccountToken).toBe(true);
    const [container, ...others] = pod.containers;
    expect(others).toEqual([]);
    expect(container.image).toBe(DEFAULT_IMAGE);
    expect(container.command).toEqual(["berth", "agent"]);
    expect(container.args).toBeUndefined();
    expect(container.env).toEqual([
      ...["BERTH_API_URL", "BERTH_AGENT_TOKEN"].map((name) => ({ name, valueFrom: { secretKeyRef: { name: AGENT_NAME, key: name } } })),
      // Project NetworkPolicies admit the agent's own namespace (src/cli/agent.ts reads it).
      { name: "POD_NAMESPACE", valueFrom: { fieldRef: { fieldPath: "metadata.namespace" } } },
    ]);
    expect(container.resources.requests).toMatchObject({ cpu: expect.any(String), memory: expect.any(String) });
    // The selector must match the template, or the API server refuses the Deployment.
    for (const [key, value] of Object.entries(deployment.spec.selector.matchLabels)) expect(deployment.spec.template.metadata.labels[key]).toBe(value);
  });

  it("the agent container meets the restricted Pod Security Standard its namespace enforces", () => {
    const ns = byKind(objects, "Namespace");
    expect(ns.metadata.labels["pod-security.kubernetes.io/enforce"]).toBe("restricted");
    const pod = byKind(objects, "Deployment").spec.template.spec;
    const container = pod.containers[0];
    expect(pod.securityContext).toMatchObject({ runAsNonRoot: true, seccompProfile: { type: "RuntimeDefault" } });
    expect(pod.securityContext.runAsUser).toBeGreaterThan(0);
    expect(container.securityContext).toEqual({
      readOnlyRootFilesystem: true,
      runAsNonRoot: true,
      allowPrivilegeEscalation: false,
      capabilities: { drop: ["ALL"] },
    });
    expect(pod.hostNetwork ?? false).toBe(false);
    // A read-only root needs a writable /tmp (tsx's compile cache).
    const tmp = container.volumeMounts.find((m: { mountPath: string }) => m.mountPath === "/tmp");
    expect(pod.volumes.find((v: { name: string }) => v.name === tmp?.name)?.emptyDir).toBeDefined();
  });

  it("--image and --namespace reach every place that names them", () => {
    const custom = renderAgentInstall({ ...OPTIONS, image: "registry.example/berth:dev", namespace: "ops-berth" });
    expect(custom[0]!.metadata!.name).toBe("ops-berth");
    for (const object of custom) if (object.metadata!.namespace !== undefined) expect(object.metadata!.namespace).toBe("ops-berth");
    expect(byKind(custom, "ClusterRoleBinding").subjects).toEqual([{ kind: "ServiceAccount", name: AGENT_NAME, namespace: "ops-berth" }]);
    expect(byKind(custom, "Deployment").spec.template.spec.containers[0].image).toBe("registry.example/berth:dev");
    for (const object of custom) expect(() => validate(object)).not.toThrow();
  });

  it("is pure, and objects share nothing (editing one leaves the others and the next render alone)", () => {
    expect(renderAgentInstall(OPTIONS)).toEqual(objects);
    const fresh = renderAgentInstall(OPTIONS);
    fresh[1]!.metadata!.labels!.edited = "yes";
    fresh[5]!.metadata!.labels!.edited = "yes";
    expect(fresh[4]!.metadata!.labels!.edited).toBeUndefined();
    expect(renderAgentInstall(OPTIONS)).toEqual(objects);
  });

  it("the default image is this package's version", () => {
    const pkg = JSON.parse(readFileSync(join(ROOT, "package.json"), "utf8")) as { version: string };
    expect(BERTH_VERSION).toBe(pkg.version);
    expect(DEFAULT_IMAGE).toBe(`ghcr.io/berth/berth:${pkg.version}`);
  });
});

describe("k8s/manifests/berth-agent.yaml", () => {
  it("is exactly the placeholder render (regenerate with UPDATE_GOLDEN=1)", () => {
    const text = renderPlaceholderYaml();
    if (UPDATE) writeFileSync(COMMITTED, text);
    else if (!existsSync(COMMITTED)) throw new Error(`${COMMITTED} is missing; run with UPDATE_GOLDEN=1 to create it`);
    expect(readFileSync(COMMITTED, "utf8")).toBe(text);
  });

  it("parses back to the render, with the placeholders in the Secret and every object valid", () => {
    const docs = parseAllDocuments(readFileSync(COMMITTED, "utf8"));
    for (const doc of docs) expect(doc.errors).toEqual([]);
    const parsed = docs.map((d) => d.toJS());
    expect(parsed).toEqual(renderAgentInstall({ apiUrl: PLACEHOLDER_API_URL, token: PLACEHOLDER_TOKEN }));
    expect(byKind(parsed, "Secret").stringData).toEqual({ BERTH_API_URL: PLACEHOLDER_API_URL, BERTH_AGENT_TOKEN: PLACEHOLDER_TOKEN });
    for (const object of parsed) validate(object);
  });

  it("explains every ClusterRole rule in a comment", () => {
    const text = readFileSync(COMMITTED, "utf8");
    const rules = text.slice(text.indexOf("kind: ClusterRole\n"), text.indexOf("kind: ClusterRoleBinding"));
    const items = rules.split("\n").filter((line) => line.startsWith("  - apiGroups:"));
    const explained = rules.split("\n").filter((line, i, lines) => line.startsWith("  - apiGroups:") && lines[i - 1]!.startsWith("  # "));
    expect(items.length).toBeGreaterThan(0);
    expect(explained).toHaveLength(items.length);
  });
});
