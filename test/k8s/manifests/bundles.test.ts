// deploy/** is exactly the render of k8s/manifests/bundles.ts (UPDATE_GOLDEN=1 rewrites it), and
// the RBAC it grants in each mode is what the agent needs there: namespaced mode reads no Secret,
// pod or namespace outside its project namespaces, and nothing in either mode reaches `escalate`,
// `bind` or a wildcard.
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { dirname, join, relative } from "node:path";
import { describe, expect, it } from "vitest";
import { parseAllDocuments } from "yaml";
import { AGENT_RULES } from "../../../k8s/manifests/agent-install.ts";
import {
  CLUSTER_MODE_RULES,
  EXAMPLE_PROJECT_NAMESPACES,
  LEASE_RULE,
  MIGRATE_JOB,
  NAMESPACED_MODE_CLUSTER_RULES,
  NAMESPACED_MODE_PROJECT_RULES,
  renderBundles,
} from "../../../k8s/manifests/bundles.ts";

const ROOT = join(import.meta.dirname, "../../..");
const UPDATE = process.env.UPDATE_GOLDEN === "1";
/** Written by hand (the admission policies confining the agent's grants), not by the generator. */
const HAND_WRITTEN = new Set(["deploy/agent/base/admission-policy.yaml"]);
const files = renderBundles();

const perms = (rules: readonly { apiGroup: string; resources: string[]; verbs: string[] }[]) =>
  rules.flatMap((r) => r.resources.flatMap((res) => r.verbs.map((v) => `${r.apiGroup || "core"} ${res} ${v}`))).sort();

describe("deploy/** install bundles", () => {
  it("are exactly the generator's render (no file missing, stale or extra)", () => {
    if (UPDATE) {
      for (const [path, text] of Object.entries(files)) {
        mkdirSync(dirname(join(ROOT, path)), { recursive: true });
        writeFileSync(join(ROOT, path), text);
      }
    }
    const onDisk = readdirSync(join(ROOT, "deploy"), { recursive: true, encoding: "utf8" })
      .map((file) => relative(ROOT, join(ROOT, "deploy", file)))
      .filter((path) => path.endsWith(".yaml") && !HAND_WRITTEN.has(path))
      .sort();
    expect(onDisk).toEqual(Object.keys(files).sort());
    for (const [path, text] of Object.entries(files)) expect(readFileSync(join(ROOT, path), "utf8"), path).toBe(text);
    for (const path of HAND_WRITTEN) expect(existsSync(join(ROOT, path)), path).toBe(true);
  });

  it("parse as YAML, with every kind known to kubectl's default scheme or kustomize", () => {
    for (const [path, text] of Object.entries(files)) {
      for (const doc of parseAllDocuments(text)) {
        expect(doc.errors, path).toEqual([]);
        expect(doc.toJS().kind, path).toMatch(/^(Kustomization|Namespace|ServiceAccount|Deployment|Service|PodDisruptionBudget|Job|NetworkPolicy|Role|RoleBinding|ClusterRole|ClusterRoleBinding)$/);
      }
    }
  });

  it("cluster mode grants AGENT_RULES as they are", () => {
    expect(CLUSTER_MODE_RULES).toBe(AGENT_RULES);
  });

  it("namespaced mode grants only nodes list/watch cluster-wide", () => {
    expect(perms(NAMESPACED_MODE_CLUSTER_RULES)).toEqual(["core nodes list", "core nodes watch"]);
  });

  it("namespaced mode's project Role is cluster mode minus nodes, with the namespace only read", () => {
    const project = perms(NAMESPACED_MODE_PROJECT_RULES);
    const expected = perms(AGENT_RULES)
      .filter((p) => !p.startsWith("core nodes "))
      .filter((p) => !p.startsWith("core namespaces ") || p === "core namespaces get");
    expect(project).toEqual(expected);
    expect(project).toContain("core secrets list");
  });

  it("no rule of any mode holds a wildcard or a privilege-granting verb", () => {
    for (const rule of [...CLUSTER_MODE_RULES, ...NAMESPACED_MODE_CLUSTER_RULES, ...NAMESPACED_MODE_PROJECT_RULES, LEASE_RULE]) {
      expect([...rule.resources, ...rule.verbs, rule.apiGroup]).not.toContain("*");
      expect(rule.verbs.filter((v) => ["escalate", "bind", "impersonate", "deletecollection"].includes(v))).toEqual([]);
    }
    expect(perms([LEASE_RULE])).toEqual(["coordination.k8s.io leases create", "coordination.k8s.io leases get", "coordination.k8s.io leases update"]);
  });

  it("the leader-election grant is a Role in the agent's namespace, never cluster-wide", () => {
    const docs = parseAllDocuments(files["deploy/agent/base/leader-election-role.yaml"]!).map((d) => d.toJS());
    expect(docs.map((d) => d.kind)).toEqual(["Role", "RoleBinding"]);
    for (const text of Object.values(files)) expect(text.includes("leases") && text.includes("kind: ClusterRole\n") && !text.includes("kind: Kustomization")).toBe(false);
  });

  it("the namespaced overlay lists each example namespace once, in the agent's env and as a Role there", () => {
    const kustomization = files["deploy/agent/overlays/namespaced/kustomization.yaml"]!;
    expect(kustomization).toContain(`value: ${EXAMPLE_PROJECT_NAMESPACES.join(",")}`);
    for (const ns of EXAMPLE_PROJECT_NAMESPACES) expect(kustomization).toContain(`project-${ns}.yaml`);
  });

  it("the migrations Job is named by version and the API replicas do not migrate", () => {
    expect(files["deploy/api/migrations/job.yaml"]).toContain(`name: ${MIGRATE_JOB}`);
    expect(files["deploy/api/deployment.yaml"]).toMatch(/name: BERTH_MIGRATE\n\s+value: "false"/);
  });
});
