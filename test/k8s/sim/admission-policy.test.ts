// ValidatingAdmissionPolicy evaluation (pure): matching, matchConditions, variables,
// validations and their messages, failurePolicy, Deny/Warn, and the Status a denial answers;
// then the agent confinement policy of deploy/agent/base/admission-policy.yaml, case by case.
import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { parseAllDocuments } from "yaml";
import { admissionAttributes, resourcesMatch, validateAdmission, type AdmissionObjects, type Operation } from "../../../k8s/sim/admission-policy.ts";
import { ADMIN, serviceAccountUser, type UserInfo } from "../../../k8s/sim/authn.ts";
import type { KubeObject } from "../../../k8s/sim/objects.ts";
import { validateRuleResources } from "../../../k8s/sim/strategies.ts";
import { resourceOf } from "../../../k8s/sim/resources.ts";

const AGENT = serviceAccountUser("berth-system", "berth-agent");
const MANAGED = { "app.kubernetes.io/managed-by": "berth-agent" };

const policy = (name: string, spec: object): KubeObject => ({ metadata: { name }, spec });
const binding = (name: string, policyName: string, validationActions: string[], extra: object = {}): KubeObject => ({
  metadata: { name },
  spec: { policyName, validationActions, ...extra },
});
const ALL_PODS = { resourceRules: [{ apiGroups: [""], apiVersions: ["v1"], operations: ["CREATE", "UPDATE"], resources: ["pods"] }] };

const podObject = (namespace: string, name: string, labels: Record<string, string> = {}, spec: object = {}): KubeObject => ({
  apiVersion: "v1",
  kind: "Pod",
  metadata: { name, namespace, labels },
  spec: { containers: [{ name: "c", image: "i" }], ...spec },
});

function request(operation: Operation, object: KubeObject, options: { user?: UserInfo; resource?: string; group?: string; subresource?: string; old?: KubeObject; namespaceObject?: KubeObject } = {}) {
  const resource = resourceOf(options.resource ?? "pods", options.group ?? "");
  const attributes = admissionAttributes({
    operation,
    resource,
    subresource: options.subresource,
    namespace: resource.namespaced ? object.metadata.namespace : undefined,
    name: object.metadata.name ?? "",
    user: options.user ?? AGENT,
    dryRun: false,
  });
  const objects: AdmissionObjects = operation === "DELETE" ? { oldObject: object } : { object, oldObject: options.old, namespaceObject: options.namespaceObject };
  return { attributes, objects };
}

describe("validateAdmission", () => {
  const replicasPolicy = policy("max-two", {
    matchConstraints: ALL_PODS,
    validations: [{ expression: "object.spec.containers.size() <= 2" }],
  });

  it("denies with the policy's and binding's names, `failed expression` when there is no message, 422 Invalid by default", () => {
    const pod = podObject("x", "three", {}, { containers: [1, 2, 3].map((i) => ({ name: `c${i}`, image: "i" })) });
    const { attributes, objects } = request("CREATE", pod);
    const { error } = validateAdmission(attributes, objects, { policies: [replicasPolicy], bindings: [binding("b", "max-two", ["Deny"])] });
    expect(error?.code).toBe(422);
    expect(error?.reason).toBe("Invalid");
    expect(error?.message).toBe(`pods "three" is forbidden: ValidatingAdmissionPolicy 'max-two' with binding 'b' denied request: failed expression: object.spec.containers.size() <= 2`);
    expect(error?.details?.causes).toEqual([{ message: "ValidatingAdmissionPolicy 'max-two' with binding 'b' denied request: failed expression: object.spec.containers.size() <= 2" }]);
  });

  it.each([
    ["Forbidden", 403],
    ["Unauthorized", 401],
    ["RequestEntityTooLarge", 413],
    ["Invalid", 422],
  ])("reason %s answers %i", (reason, code) => {
    const p = policy("p", { matchConstraints: ALL_PODS, validations: [{ expression: "false", message: "no", reason }] });
    const { attributes, objects } = request("CREATE", podObject("x", "a"));
    const { error } = validateAdmission(attributes, objects, { policies: [p], bindings: [binding("b", "p", ["Deny"])] });
    expect([error?.code, error?.reason, error?.message]).toEqual([code, reason, `pods "a" is forbidden: ValidatingAdmissionPolicy 'p' with binding 'b' denied request: no`]);
  });

  it("messageExpression wins over message; a failing messageExpression falls back to message", () => {
    const p = policy("p", {
      matchConstraints: ALL_PODS,
      validations: [
        { expression: "object.metadata.name != 'a'", message: "static", messageExpression: "'name ' + object.metadata.name + ' is taken'" },
        { expression: "object.metadata.name != 'b'", message: "static", messageExpression: "object.missing.field" },
      ],
    });
    const deny = (name: string) => {
      const { attributes, objects } = request("CREATE", podObject("x", name));
      return validateAdmission(attributes, objects, { policies: [p], bindings: [binding("b", "p", ["Deny"])] }).error?.message;
    };
    expect(deny("a")).toMatch(/denied request: name a is taken$/);
    expect(deny("b")).toMatch(/denied request: static$/);
    expect(deny("c")).toBeUndefined();
  });

  it("Warn warns and admits; Warn and Deny together do both; a binding to no policy does nothing", () => {
    const p = policy("p", { matchConstraints: ALL_PODS, validations: [{ expression: "false", message: "bad" }] });
    const { attributes, objects } = request("CREATE", podObject("x", "a"));
    expect(validateAdmission(attributes, objects, { policies: [p], bindings: [binding("w", "p", ["Warn"])] })).toEqual({
      warnings: ["Validation failed for ValidatingAdmissionPolicy 'p' with binding 'w': bad"],
    });
    const both = validateAdmission(attributes, objects, { policies: [p], bindings: [binding("wd", "p", ["Warn", "Deny"])] });
    expect(both.warnings).toHaveLength(1);
    expect(both.error?.code).toBe(422);
    expect(validateAdmission(attributes, objects, { policies: [p], bindings: [binding("x", "absent", ["Deny"])] })).toEqual({ warnings: [] });
    expect(validateAdmission(attributes, objects, { policies: [p], bindings: [binding("a", "p", ["Audit"])] })).toEqual({ warnings: [] });
  });

  it("matchConditions: a false one skips the policy; variables are visible to validations", () => {
    const p = policy("p", {
      matchConstraints: ALL_PODS,
      matchConditions: [{ name: "agent-only", expression: "request.userInfo.username.startsWith('system:serviceaccount:')" }],
      variables: [{ name: "ns", expression: "object.metadata.namespace" }],
      validations: [{ expression: "variables.ns.startsWith('berth-')", messageExpression: "'not in ' + variables.ns" }],
    });
    const stored = { policies: [p], bindings: [binding("b", "p", ["Deny"])] };
    const agent = request("CREATE", podObject("kube-system", "a"));
    expect(validateAdmission(agent.attributes, agent.objects, stored).error?.message).toMatch(/denied request: not in kube-system$/);
    const admin = request("CREATE", podObject("kube-system", "a"), { user: ADMIN });
    expect(validateAdmission(admin.attributes, admin.objects, stored).error).toBeUndefined();
  });

  it("failurePolicy: Fail refuses when an expression errs, Ignore admits", () => {
    const spec = { matchConstraints: ALL_PODS, validations: [{ expression: "object.spec.nodeName == 'x'" }] };
    const { attributes, objects } = request("CREATE", podObject("x", "a"));
    const fail = validateAdmission(attributes, objects, { policies: [policy("p", spec)], bindings: [binding("b", "p", ["Deny"])] });
    expect(fail.error?.message).toMatch(/^pods "a" is forbidden: ValidatingAdmissionPolicy 'p' with binding 'b' denied request: expression 'object.spec.nodeName == 'x'' resulted in error: /);
    const ignore = validateAdmission(attributes, objects, { policies: [policy("p", { ...spec, failurePolicy: "Ignore" })], bindings: [binding("b", "p", ["Deny"])] });
    expect(ignore.error).toBeUndefined();
  });

  it("integers are CEL ints; oldObject is there on UPDATE, object is null on DELETE", () => {
    const p = policy("p", {
      matchConstraints: { resourceRules: [{ apiGroups: ["apps"], apiVersions: ["v1"], operations: ["*"], resources: ["deployments"] }] },
      validations: [
        { expression: "request.operation != 'UPDATE' || object.spec.replicas >= oldObject.spec.replicas", message: "no scale down" },
        { expression: "request.operation != 'DELETE' || (object == null && oldObject.metadata.name == 'd')", message: "delete view" },
        { expression: "request.operation == 'DELETE' || object.spec.replicas == 3 || object.spec.replicas < 3", message: "ints" },
      ],
    });
    const stored = { policies: [p], bindings: [binding("b", "p", ["Deny"])] };
    const deployment = (replicas: number): KubeObject => ({ metadata: { name: "d", namespace: "x" }, spec: { replicas } });
    const down = request("UPDATE", deployment(1), { resource: "deployments", group: "apps", old: deployment(3) });
    expect(validateAdmission(down.attributes, down.objects, stored).error?.message).toMatch(/no scale down$/);
    const up = request("UPDATE", deployment(3), { resource: "deployments", group: "apps", old: deployment(1) });
    expect(validateAdmission(up.attributes, up.objects, stored).error).toBeUndefined();
    const gone = request("DELETE", deployment(3), { resource: "deployments", group: "apps" });
    expect(validateAdmission(gone.attributes, gone.objects, stored).error).toBeUndefined();
  });
});

describe("resourcesMatch", () => {
  const pod = request("CREATE", podObject("x", "a", { tier: "gpu" }), { namespaceObject: { metadata: { name: "x", labels: { env: "prod" } } } });
  const status = request("UPDATE", podObject("x", "a"), { subresource: "status" });
  const ns = request("CREATE", { metadata: { name: "berth-y", labels: { env: "prod" } } }, { resource: "namespaces" });
  const node = request("CREATE", { metadata: { name: "n" } }, { resource: "nodes" });
  const rule = (resources: string[], extra: object = {}) => ({ resourceRules: [{ apiGroups: [""], apiVersions: ["v1"], operations: ["*"], resources, ...extra }] });
  it.each<[string, object | undefined, ReturnType<typeof request>, boolean, boolean]>([
    ["named resource", rule(["pods"]), pod, true, true],
    ["other resource", rule(["services"]), pod, true, false],
    ["`*` is not subresources", rule(["*"]), status, true, false],
    ["`pods/*` is pods' subresources", rule(["pods/*"]), status, true, true],
    ["`*/*` everything", rule(["*/*"]), status, true, true],
    ["operation not listed", { resourceRules: [{ apiGroups: [""], apiVersions: ["v1"], operations: ["DELETE"], resources: ["pods"] }] }, pod, true, false],
    ["scope Cluster skips a namespaced pod", rule(["pods"], { scope: "Cluster" }), pod, true, false],
    ["resourceNames", rule(["pods"], { resourceNames: ["b"] }), pod, true, false],
    ["excludeResourceRules win", { ...rule(["pods"]), excludeResourceRules: rule(["pods"]).resourceRules }, pod, true, false],
    ["namespaceSelector on the namespace's labels", { ...rule(["pods"]), namespaceSelector: { matchLabels: { env: "prod" } } }, pod, true, true],
    ["namespaceSelector that does not match", { ...rule(["pods"]), namespaceSelector: { matchLabels: { env: "dev" } } }, pod, true, false],
    ["a Namespace matches by its own labels", { ...rule(["namespaces"]), namespaceSelector: { matchLabels: { env: "prod" } } }, ns, true, true],
    ["other cluster-scoped objects ignore namespaceSelector", { ...rule(["nodes"]), namespaceSelector: { matchLabels: { env: "dev" } } }, node, true, true],
    ["objectSelector", { ...rule(["pods"]), objectSelector: { matchExpressions: [{ key: "tier", operator: "In", values: ["gpu"] }] } }, pod, true, true],
    ["objectSelector that does not match", { ...rule(["pods"]), objectSelector: { matchLabels: { tier: "cpu" } } }, pod, true, false],
    ["a binding without matchResources takes what the policy matched", undefined, pod, false, true],
    ["a binding's matchResources without rules still selects", { namespaceSelector: { matchLabels: { env: "dev" } } }, pod, false, false],
  ])("%s", (_, match, { attributes, objects }, requireRules, matched) => {
    expect(resourcesMatch(match as never, attributes, objects, requireRules)).toBe(matched);
  });
});

describe("the agent confinement policy", () => {
  const [confinement, confinementBinding] = parseAllDocuments(readFileSync(new URL("../../../deploy/agent/base/admission-policy.yaml", import.meta.url), "utf8")).map((d) => d.toJSON() as KubeObject);
  const stored = { policies: [confinement!], bindings: [confinementBinding!] };
  const labelledNs = (name: string, enforce?: string): KubeObject => ({
    metadata: { name, labels: { ...MANAGED, ...(enforce && { "pod-security.kubernetes.io/enforce": enforce }) } },
  });
  const secret = (type?: string): KubeObject => ({ metadata: { name: "s", namespace: "berth-x", labels: MANAGED }, ...(type && { type }) });
  const lease: KubeObject = { metadata: { name: "berth-agent", namespace: "berth-system" }, spec: {} };
  const config = (namespace: string, labels = MANAGED): KubeObject => ({ metadata: { name: "c", namespace, labels } });

  it.each<[string, ReturnType<typeof request>, string | undefined]>([
    ["a labelled pod in berth-x", request("CREATE", podObject("berth-x", "p", MANAGED)), undefined],
    ["a pod in kube-system", request("CREATE", podObject("kube-system", "p", MANAGED)), "may write only in berth-* project namespaces, not in kube-system"],
    ["anything in berth-system", request("CREATE", config("berth-system")), "not in berth-system"],
    ["its Lease in berth-system", request("UPDATE", lease, { resource: "leases", group: "coordination.k8s.io", old: lease }), undefined],
    ["a Lease elsewhere", request("CREATE", { ...lease, metadata: { name: "l", namespace: "kube-system" } }, { resource: "leases", group: "coordination.k8s.io" }), "not in kube-system"],
    ["an unlabelled ConfigMap", request("CREATE", config("berth-x", {} as typeof MANAGED)), "labelled app.kubernetes.io/managed-by=berth-agent"],
    ["labelling a foreign object", request("UPDATE", config("berth-x"), { old: config("berth-x", {} as typeof MANAGED), resource: "configmaps" }), "labelled app.kubernetes.io/managed-by"],
    ["deleting an unlabelled object", request("DELETE", config("berth-x", {} as typeof MANAGED), { resource: "configmaps" }), "labelled app.kubernetes.io/managed-by"],
    ["deleting its own object", request("DELETE", config("berth-x"), { resource: "configmaps" }), undefined],
    ["an Opaque Secret", request("CREATE", secret("Opaque"), { resource: "secrets" }), undefined],
    ["a Secret without type (Opaque)", request("CREATE", secret(), { resource: "secrets" }), undefined],
    ["a service-account-token Secret", request("CREATE", secret("kubernetes.io/service-account-token"), { resource: "secrets" }), "only Opaque Secrets, not kubernetes.io/service-account-token"],
    ["a restricted berth-* namespace", request("CREATE", labelledNs("berth-p", "restricted"), { resource: "namespaces" }), undefined],
    ["a namespace not berth-*", request("CREATE", labelledNs("default", "restricted"), { resource: "namespaces" }), "only namespaces named berth-*, not default"],
    ["a privileged namespace", request("CREATE", labelledNs("berth-p", "privileged"), { resource: "namespaces" }), "pod-security.kubernetes.io/enforce"],
    ["a namespace without Pod Security", request("CREATE", labelledNs("berth-p"), { resource: "namespaces" }), "pod-security.kubernetes.io/enforce"],
    ["hostPID", request("CREATE", podObject("berth-x", "p", MANAGED, { hostPID: true })), "may not create privileged pods"],
    ["hostIPC", request("CREATE", podObject("berth-x", "p", MANAGED, { hostIPC: true })), "may not create privileged pods"],
    ["a privileged init container", request("CREATE", podObject("berth-x", "p", MANAGED, { initContainers: [{ name: "i", image: "i", securityContext: { privileged: true } }] })), "may not create privileged pods"],
    ["privileged: false is fine", request("CREATE", podObject("berth-x", "p", MANAGED, { containers: [{ name: "c", image: "i", securityContext: { privileged: false } }] })), undefined],
    ["a status write is not confined", request("UPDATE", podObject("kube-system", "p"), { subresource: "status", old: podObject("kube-system", "p") }), undefined],
    ["other users are not confined", request("CREATE", podObject("kube-system", "p"), { user: ADMIN }), undefined],
  ])("%s", (_, { attributes, objects }, denied) => {
    const { error } = validateAdmission(attributes, objects, stored);
    if (denied === undefined) expect(error).toBeUndefined();
    else {
      expect(error?.code).toBe(403);
      expect(error?.message).toContain("ValidatingAdmissionPolicy 'berth-agent-confinement' with binding 'berth-agent-confinement' denied request: ");
      expect(error?.message).toContain(denied);
    }
  });
});

describe("a policy's resourceRules resources, validated as kube-apiserver does", () => {
  it.each([
    [["*/*"], []],
    [["*"], []],
    [["pods", "pods/status"], []],
    [["*", "*/*"], ["if '*/*' is present, must not specify other resources"]],
    [["pods", "*/*"], ["if '*/*' is present, must not specify other resources"]],
    [["*", "pods"], ["if '*' is present, must not specify other resources without subresources"]],
    [["pods/*", "pods/status"], ["if 'pods/*' is present, must not specify pods/status"]],
    [["*/status", "pods/status"], ["if '*/status' is present, must not specify pods/status"]],
    [[], ["Required value"]],
  ])("%j", (resources, messages) => {
    const causes = validateRuleResources(resources, "spec.matchConstraints.resourceRules[0].resources");
    expect(causes.map((c) => c.message.replace(/^Invalid value: .*?: /, ""))).toEqual(messages);
  });

  it("deploy/agent's confinement policy passes", () => {
    const file = readFileSync(new URL("../../../deploy/agent/base/admission-policy.yaml", import.meta.url), "utf8");
    const confinement = parseAllDocuments(file).map((d) => d.toJS()).find((o) => o.kind === "ValidatingAdmissionPolicy");
    for (const rule of confinement.spec.matchConstraints.resourceRules) expect(validateRuleResources(rule.resources, "resources")).toEqual([]);
  });
});
