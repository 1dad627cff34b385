// Per-kind rules the API server applies on every write: defaults, validation, what an update may
// change, and the initial status. Only what a client could observe or trip over is modelled:
// name and label syntax, pod spec immutability (the agent must replace pods, never edit them),
// Service ClusterIP immutability, a Deployment selector that matches its template, Secret
// `stringData`. Defaults are the ones the kubelet reads (probe timings, restart policy, grace).
import { errors, fieldError, type KubeObject, type StatusCause } from "./objects.ts";
import { deepEqual, isObject } from "./patch.ts";
import { fromSelectorObject, matchesLabels, SelectorError, type LabelSelectorObject } from "./selectors.ts";
import type { ResourceType } from "./resources.ts";
import { defaultClaim, initialClaimStatus } from "./volumes.ts";

type Dict = Record<string, any>;

const DNS1123_LABEL = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;
const DNS1123_SUBDOMAIN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;
const DNS1035_LABEL = /^[a-z]([-a-z0-9]*[a-z0-9])?$/;
const QUALIFIED_NAME = /^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$/;
const LABEL_VALUE = /^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$/;

function checkName(resource: ResourceType, name: string): StatusCause[] {
  if (resource.resource === "namespaces") {
    return DNS1123_LABEL.test(name) && name.length <= 63
      ? []
      : [fieldError.invalid("metadata.name", name, "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character")];
  }
  if (resource.resource === "services") {
    return DNS1035_LABEL.test(name) && name.length <= 63
      ? []
      : [fieldError.invalid("metadata.name", name, "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character")];
  }
  if (resource.group === "rbac.authorization.k8s.io") return name.includes("/") || name.includes("%") ? [fieldError.invalid("metadata.name", name, "may not contain '/' or '%'")] : [];
  return DNS1123_SUBDOMAIN.test(name) && name.length <= 253
    ? []
    : [fieldError.invalid("metadata.name", name, "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character")];
}

function checkKey(field: string, key: string): StatusCause[] {
  const slash = key.lastIndexOf("/");
  const prefix = slash >= 0 ? key.slice(0, slash) : undefined;
  const name = slash >= 0 ? key.slice(slash + 1) : key;
  if (prefix !== undefined && (!DNS1123_SUBDOMAIN.test(prefix) || prefix.length > 253)) return [fieldError.invalid(field, key, "prefix part must be a lowercase RFC 1123 subdomain")];
  if (!QUALIFIED_NAME.test(name) || name.length > 63) return [fieldError.invalid(field, key, "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character, at most 63 characters")];
  return [];
}

export function checkMetadata(resource: ResourceType, object: KubeObject): StatusCause[] {
  const causes = checkName(resource, object.metadata.name ?? "");
  for (const [key, value] of Object.entries(object.metadata.labels ?? {})) {
    causes.push(...checkKey("metadata.labels", key));
    if (typeof value !== "string" || value.length > 63 || !LABEL_VALUE.test(value)) {
      causes.push(fieldError.invalid("metadata.labels", value, "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character, at most 63 characters"));
    }
  }
  for (const [key, value] of Object.entries(object.metadata.annotations ?? {})) {
    causes.push(...checkKey("metadata.annotations", key));
    if (typeof value !== "string") causes.push(fieldError.invalid(`metadata.annotations`, value, "must be a string"));
  }
  return causes;
}

// ---------------------------------------------------------------------------------------------
// Pods

function defaultProbe(probe: Dict | undefined): void {
  if (!probe) return;
  probe.timeoutSeconds ??= 1;
  probe.periodSeconds ??= 10;
  probe.successThreshold ??= 1;
  probe.failureThreshold ??= 3;
  if (probe.httpGet) probe.httpGet.scheme ??= "HTTP";
}

function defaultContainer(container: Dict): void {
  container.terminationMessagePath ??= "/dev/termination-log";
  container.terminationMessagePolicy ??= "File";
  const image = String(container.image ?? "");
  const tag = image.includes("@") ? "digest" : /:[^/]+$/.exec(image)?.[0];
  container.imagePullPolicy ??= !tag || tag === ":latest" ? "Always" : "IfNotPresent";
  container.resources ??= {};
  for (const port of container.ports ?? []) port.protocol ??= "TCP";
  defaultProbe(container.startupProbe);
  defaultProbe(container.readinessProbe);
  defaultProbe(container.livenessProbe);
}

export function defaultPodSpec(spec: Dict): void {
  spec.restartPolicy ??= "Always";
  spec.terminationGracePeriodSeconds ??= 30;
  spec.dnsPolicy ??= "ClusterFirst";
  spec.schedulerName ??= "default-scheduler";
  spec.securityContext ??= {};
  spec.enableServiceLinks ??= true;
  spec.priority ??= 0;
  for (const container of [...(spec.containers ?? []), ...(spec.initContainers ?? [])]) defaultContainer(container);
}

function validatePodSpec(spec: Dict | undefined, field: string): StatusCause[] {
  if (!isObject(spec)) return [fieldError.required(field)];
  const causes: StatusCause[] = [];
  const containers = spec.containers;
  if (!Array.isArray(containers) || containers.length === 0) causes.push(fieldError.required(`${field}.containers`));
  const names = new Set<string>();
  for (const [list, items] of [["containers", containers], ["initContainers", spec.initContainers]] as const) {
    for (const [i, container] of ((Array.isArray(items) ? items : []) as Dict[]).entries()) {
      const at = `${field}.${list}[${i}]`;
      if (!container.name) causes.push(fieldError.required(`${at}.name`));
      else if (!DNS1123_LABEL.test(container.name)) causes.push(fieldError.invalid(`${at}.name`, container.name, "a lowercase RFC 1123 label"));
      else if (names.has(container.name)) causes.push({ reason: "FieldValueDuplicate", field: `${at}.name`, message: `Duplicate value: "${container.name}"` });
      names.add(container.name);
      if (!container.image) causes.push(fieldError.required(`${at}.image`));
    }
  }
  if (!["Always", "OnFailure", "Never"].includes(String(spec.restartPolicy))) {
    causes.push({ reason: "FieldValueNotSupported", field: `${field}.restartPolicy`, message: `Unsupported value: "${spec.restartPolicy}": supported values: "Always", "OnFailure", "Never"` });
  }
  return causes;
}

const POD_UPDATE_RULE =
  "pod updates may not change fields other than `spec.containers[*].image`,`spec.initContainers[*].image`,`spec.activeDeadlineSeconds`,`spec.tolerations` (only additions to existing tolerations),`spec.terminationGracePeriodSeconds` (allow it to be set to 1 if it was previously negative)";

/** The part of a pod spec an update must leave alone. */
function immutablePodSpec(spec: Dict): Dict {
  const copy = structuredClone(spec);
  delete copy.activeDeadlineSeconds;
  delete copy.tolerations;
  delete copy.terminationGracePeriodSeconds;
  delete copy.schedulingGates;
  for (const container of [...(copy.containers ?? []), ...(copy.initContainers ?? [])]) delete container.image;
  return copy;
}

function podUpdateCauses(next: Dict, old: Dict): StatusCause[] {
  if (!deepEqual(immutablePodSpec(next), immutablePodSpec(old))) return [fieldError.forbidden("spec", POD_UPDATE_RULE)];
  const kept = (old.tolerations ?? []).every((t: unknown) => (next.tolerations ?? []).some((n: unknown) => deepEqual(n, t)));
  if (!kept) return [fieldError.forbidden("spec.tolerations", "existing toleration can not be modified except its tolerationSeconds")];
  return [];
}

function qosClass(spec: Dict): string {
  const containers = (spec.containers ?? []) as Dict[];
  const has = (c: Dict, kind: "requests" | "limits", name: string) => c.resources?.[kind]?.[name] !== undefined;
  if (containers.every((c) => !["cpu", "memory"].some((r) => has(c, "requests", r) || has(c, "limits", r)))) return "BestEffort";
  const guaranteed = containers.every((c) =>
    ["cpu", "memory"].every((r) => has(c, "limits", r) && (!has(c, "requests", r) || String(c.resources.requests[r]) === String(c.resources.limits[r]))),
  );
  return guaranteed ? "Guaranteed" : "Burstable";
}

// ---------------------------------------------------------------------------------------------
// Leases (coordination.k8s.io/v1): leader election's lock

/**
 * metav1.MicroTime decodes with Go's time.Parse and RFC3339Micro, so the fraction must have exactly
 * six digits: `new Date().toISOString()` (three) is refused with 400 before any validation, as by
 * kube-apiserver; it encodes back in UTC.
 */
const MICRO_TIME = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{6}(Z|[+-]\d{2}:\d{2})$/;
const RFC3339_MICRO = "2006-01-02T15:04:05.000000Z07:00";

function decodeMicroTime(spec: Dict, field: "acquireTime" | "renewTime"): void {
  const value = spec[field];
  if (value === undefined || value === null) return;
  if (typeof value !== "string" || !MICRO_TIME.test(value) || Number.isNaN(Date.parse(value))) {
    throw errors.badRequest(`Lease in version "v1" cannot be handled as a Lease: parsing time ${JSON.stringify(value)} as "${RFC3339_MICRO}": cannot parse as RFC3339Micro (spec.${field})`);
  }
  const micros = /\.(\d{6})/.exec(value)![1]!;
  spec[field] = new Date(value).toISOString().replace(/\.\d{3}Z$/, `.${micros}Z`);
}

/** pkg/apis/coordination/validation ValidateLeaseSpec (the fields coordination.k8s.io/v1 serves without feature gates). */
function validateLeaseSpec(spec: Dict): StatusCause[] {
  const causes: StatusCause[] = [];
  const duration = spec.leaseDurationSeconds;
  if (duration !== undefined && duration !== null && (!Number.isInteger(duration) || duration <= 0)) {
    causes.push(fieldError.invalid("spec.leaseDurationSeconds", duration, "must be greater than 0"));
  }
  const transitions = spec.leaseTransitions;
  if (transitions !== undefined && transitions !== null && (!Number.isInteger(transitions) || transitions < 0)) {
    causes.push(fieldError.invalid("spec.leaseTransitions", transitions, "must be greater than or equal to 0"));
  }
  return causes;
}

/**
 * pkg/apis/admissionregistration/validation validateResources, for a policy's
 * matchConstraints.resourceRules[].resources: `*\/*` stands alone, `*` with no plain resource.
 */
export function validateRuleResources(resources: readonly string[], field: string): StatusCause[] {
  const causes: StatusCause[] = [];
  if (resources.length === 0) causes.push(fieldError.required(field));
  const withWildcardSubresources = new Set<string>();
  const subresourcesWithWildcardResource = new Set<string>();
  let doubleWildcard = false;
  let singleWildcard = false;
  let plainResource = false;
  resources.forEach((entry, i) => {
    if (entry === "") return causes.push(fieldError.required(`${field}[${i}]`));
    if (entry === "*/*") doubleWildcard = true;
    if (entry === "*") singleWildcard = true;
    const slash = entry.indexOf("/");
    if (slash < 0) {
      plainResource = entry !== "*";
      return;
    }
    const [resource, subresource] = [entry.slice(0, slash), entry.slice(slash + 1)];
    if (withWildcardSubresources.has(resource)) causes.push(fieldError.invalid(`${field}[${i}]`, entry, `if '${resource}/*' is present, must not specify ${entry}`));
    if (subresourcesWithWildcardResource.has(subresource)) causes.push(fieldError.invalid(`${field}[${i}]`, entry, `if '*/${subresource}' is present, must not specify ${entry}`));
    if (subresource === "*") withWildcardSubresources.add(resource);
    if (resource === "*") subresourcesWithWildcardResource.add(subresource);
  });
  if (resources.length > 1 && doubleWildcard) causes.push(fieldError.invalid(field, resources, "if '*/*' is present, must not specify other resources"));
  if (singleWildcard && plainResource) causes.push(fieldError.invalid(field, resources, "if '*' is present, must not specify other resources without subresources"));
  return causes;
}

// ---------------------------------------------------------------------------------------------
// The per-kind table

export interface Strategy {
  /** Defaults filled in on create and on every update. */
  defaults?(object: Dict): void;
  /** The status a new object starts with (kinds with a status subresource). */
  initialStatus?(object: Dict): unknown;
  validate?(object: Dict): StatusCause[];
  /** Checks and carries over what an update may not change. */
  update?(next: Dict, old: Dict): StatusCause[];
}

function deploymentSelectorCauses(object: Dict): StatusCause[] {
  const selector = object.spec?.selector as LabelSelectorObject | undefined;
  if (!selector || (Object.keys(selector.matchLabels ?? {}).length === 0 && (selector.matchExpressions ?? []).length === 0)) {
    return [fieldError.required("spec.selector")];
  }
  try {
    if (!matchesLabels(fromSelectorObject(selector), object.spec?.template?.metadata?.labels)) {
      return [fieldError.invalid("spec.template.metadata.labels", object.spec?.template?.metadata?.labels ?? {}, "`selector` does not match template `labels`")];
    }
  } catch (error) {
    if (error instanceof SelectorError) return [fieldError.invalid("spec.selector", selector, error.message)];
    throw error;
  }
  return [];
}

const STRATEGIES: Record<string, Strategy> = {
  validatingadmissionpolicies: {
    validate: (policy) =>
      ((policy.spec?.matchConstraints?.resourceRules ?? []) as Dict[]).flatMap((rule, i) =>
        validateRuleResources(rule.resources ?? [], `spec.matchConstraints.resourceRules[${i}].resources`),
      ),
  },
  leases: {
    defaults: (lease) => {
      lease.spec ??= {};
      decodeMicroTime(lease.spec, "acquireTime");
      decodeMicroTime(lease.spec, "renewTime");
    },
    validate: (lease) => validateLeaseSpec(lease.spec ?? {}),
  },
  pods: {
    defaults: (pod) => {
      pod.spec ??= {};
      defaultPodSpec(pod.spec);
    },
    initialStatus: (pod) => ({ phase: "Pending", qosClass: qosClass(pod.spec ?? {}) }),
    validate: (pod) => validatePodSpec(pod.spec, "spec"),
    update: (next, old) => podUpdateCauses(next.spec ?? {}, old.spec ?? {}),
  },
  services: {
    defaults: (service) => {
      const spec = (service.spec ??= {});
      spec.type ??= "ClusterIP";
      spec.sessionAffinity ??= "None";
      spec.internalTrafficPolicy ??= "Cluster";
      for (const port of spec.ports ?? []) {
        port.protocol ??= "TCP";
        port.targetPort ??= port.port;
      }
    },
    initialStatus: () => ({ loadBalancer: {} }),
    validate: (service) => {
      const causes: StatusCause[] = [];
      const ports = (service.spec?.ports ?? []) as Dict[];
      if (ports.length === 0 && service.spec?.clusterIP !== "None") causes.push(fieldError.required("spec.ports"));
      for (const [i, port] of ports.entries()) {
        if (!Number.isInteger(port.port) || port.port < 1 || port.port > 65535) causes.push(fieldError.invalid(`spec.ports[${i}].port`, port.port, "must be between 1 and 65535, inclusive"));
        if (ports.length > 1 && !port.name) causes.push(fieldError.required(`spec.ports[${i}].name`));
      }
      return causes;
    },
    update: (next, old) => {
      // An omitted ClusterIP keeps the allocated one; a different one is refused.
      for (const field of ["clusterIP", "clusterIPs", "ipFamilies", "ipFamilyPolicy"] as const) {
        if (next.spec[field] === undefined || next.spec[field] === "") next.spec[field] = old.spec?.[field];
      }
      return deepEqual(next.spec.clusterIP, old.spec?.clusterIP) ? [] : [fieldError.immutable("spec.clusterIP", next.spec.clusterIP)];
    },
  },
  namespaces: {
    defaults: (ns) => {
      ns.metadata.labels = { ...ns.metadata.labels, "kubernetes.io/metadata.name": ns.metadata.name };
      ns.spec ??= {};
      ns.spec.finalizers ??= ["kubernetes"];
    },
    initialStatus: () => ({ phase: "Active" }),
  },
  secrets: {
    defaults: (secret) => {
      secret.type ??= "Opaque";
      if (isObject(secret.stringData)) {
        secret.data = { ...secret.data };
        for (const [key, value] of Object.entries(secret.stringData)) secret.data[key] = Buffer.from(String(value)).toString("base64");
        delete secret.stringData;
      }
    },
  },
  deployments: {
    defaults: (deployment) => {
      const spec = (deployment.spec ??= {});
      spec.replicas ??= 1;
      spec.revisionHistoryLimit ??= 10;
      spec.progressDeadlineSeconds ??= 600;
      spec.strategy ??= { type: "RollingUpdate" };
      if (spec.strategy.type === "RollingUpdate") spec.strategy.rollingUpdate = { maxSurge: "25%", maxUnavailable: "25%", ...spec.strategy.rollingUpdate };
      spec.template ??= {};
      spec.template.spec ??= {};
      defaultPodSpec(spec.template.spec);
    },
    initialStatus: () => ({}),
    validate: (deployment) => [...deploymentSelectorCauses(deployment), ...validatePodSpec(deployment.spec?.template?.spec, "spec.template.spec")],
    update: (next, old) => (deepEqual(next.spec?.selector, old.spec?.selector) ? [] : [fieldError.immutable("spec.selector", next.spec?.selector)]),
  },
  jobs: {
    // kube-apiserver's Job strategy: a selector on the Job's own uid and the labels that match it
    // on the template (unless manualSelector), the counting defaults, an immutable template.
    defaults: (job) => {
      const spec = (job.spec ??= {});
      const uid = job.metadata.uid;
      spec.template ??= {};
      if (!spec.manualSelector && uid) {
        spec.selector ??= { matchLabels: { "batch.kubernetes.io/controller-uid": uid } };
        const name = job.metadata.name;
        spec.template.metadata = {
          ...spec.template.metadata,
          labels: { ...spec.template.metadata?.labels, "batch.kubernetes.io/controller-uid": uid, "batch.kubernetes.io/job-name": name, "controller-uid": uid, "job-name": name },
        };
      }
      spec.backoffLimit ??= 6;
      spec.completions ??= 1;
      spec.parallelism ??= 1;
      spec.completionMode ??= "NonIndexed";
      spec.suspend ??= false;
      spec.template.spec ??= {};
      defaultPodSpec(spec.template.spec);
    },
    initialStatus: () => ({}),
    validate: (job) => {
      const policy = job.spec?.template?.spec?.restartPolicy;
      const causes = validatePodSpec(job.spec?.template?.spec, "spec.template.spec");
      if (policy !== "Never" && policy !== "OnFailure") {
        causes.push({ reason: "FieldValueNotSupported", field: "spec.template.spec.restartPolicy", message: `Unsupported value: "${policy}": supported values: "OnFailure", "Never"` });
      }
      return causes;
    },
    update: (next, old) => [
      ...(deepEqual(next.spec?.selector, old.spec?.selector) ? [] : [fieldError.immutable("spec.selector", next.spec?.selector)]),
      ...(deepEqual(next.spec?.template, old.spec?.template) ? [] : [fieldError.immutable("spec.template", next.spec?.template)]),
    ],
  },
  persistentvolumeclaims: {
    defaults: defaultClaim,
    initialStatus: initialClaimStatus,
    validate: (claim) => {
      const causes: StatusCause[] = [];
      if (!Array.isArray(claim.spec?.accessModes) || claim.spec.accessModes.length === 0) causes.push(fieldError.required("spec.accessModes"));
      if (!claim.spec?.resources?.requests?.storage) causes.push(fieldError.required("spec.resources[storage]"));
      return causes;
    },
    update: (next, old) => {
      // The binding stays; a claim's spec is immutable apart from its requests once bound.
      next.spec.volumeName ||= old.spec?.volumeName;
      const causes: StatusCause[] = [];
      for (const field of ["accessModes", "storageClassName", "volumeName", "volumeMode"] as const) {
        if (old.spec?.[field] !== undefined && !deepEqual(next.spec?.[field], old.spec[field])) causes.push(fieldError.immutable(`spec.${field}`, next.spec?.[field]));
      }
      return causes;
    },
  },
};

export function strategyFor(resource: ResourceType): Strategy {
  return STRATEGIES[resource.resource] ?? {};
}
