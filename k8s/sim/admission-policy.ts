// ValidatingAdmissionPolicy (admissionregistration.k8s.io/v1), pure: a write's attributes, its
// object, old object and namespace, and the stored policies and bindings → denied (the Status
// kube-apiserver answers) or allowed, with warnings. Follows
// https://kubernetes.io/docs/reference/access-authn-authz/validating-admission-policy/:
// matchConstraints and the binding's matchResources (resourceRules, excludeResourceRules,
// namespaceSelector, objectSelector), matchConditions, variables, validations (message,
// messageExpression, reason), failurePolicy, validationActions Deny and Warn (Audit has no
// audit log here). Policies with paramKind are not evaluated (no params in the simulator).
// CEL is @marcbachmann/cel-js; JSON integers become CEL ints, as the apiserver reads them.
import { Environment } from "@marcbachmann/cel-js";
import type { UserInfo } from "./authn.ts";
import { ApiError, type KubeObject } from "./objects.ts";
import type { ResourceType } from "./resources.ts";
import { fromSelectorObject, matchesLabels, type LabelSelectorObject } from "./selectors.ts";

export type Operation = "CREATE" | "UPDATE" | "DELETE" | "CONNECT";

/** `request` as CEL sees it (admission.k8s.io/v1 AdmissionRequest, the fields policies read). */
export interface AdmissionAttributes {
  operation: Operation;
  kind: { group: string; version: string; kind: string };
  resource: { group: string; version: string; resource: string };
  subResource?: string;
  namespace?: string;
  name: string;
  userInfo: UserInfo;
  dryRun: boolean;
}

export interface AdmissionObjects {
  object?: KubeObject;
  oldObject?: KubeObject;
  namespaceObject?: KubeObject;
}

export interface StoredPolicies {
  policies: readonly KubeObject[];
  bindings: readonly KubeObject[];
}

export interface AdmissionResult {
  error?: ApiError;
  warnings: string[];
}

interface RuleWithOperations {
  apiGroups?: string[];
  apiVersions?: string[];
  resources?: string[];
  resourceNames?: string[];
  operations?: string[];
  scope?: string;
}

interface MatchResources {
  namespaceSelector?: LabelSelectorObject;
  objectSelector?: LabelSelectorObject;
  resourceRules?: RuleWithOperations[];
  excludeResourceRules?: RuleWithOperations[];
}

interface Validation {
  expression: string;
  message?: string;
  messageExpression?: string;
  reason?: string;
}

export function admissionAttributes(input: {
  operation: Operation;
  resource: ResourceType;
  subresource?: string;
  namespace?: string;
  name: string;
  user: UserInfo;
  dryRun: boolean;
}): AdmissionAttributes {
  const { resource } = input;
  return {
    operation: input.operation,
    kind: { group: resource.group, version: resource.version, kind: resource.kind },
    resource: { group: resource.group, version: resource.version, resource: resource.resource },
    ...(input.subresource && { subResource: input.subresource }),
    ...(input.namespace && { namespace: input.namespace }),
    name: input.name,
    userInfo: input.user,
    dryRun: input.dryRun,
  };
}

const cel = new Environment({ unlistedVariablesAreDyn: true, enableOptionalTypes: true, homogeneousAggregateLiterals: false });

/** JSON as CEL values: integers are int (bigint), as the apiserver reads int64 fields. */
function celValue(value: unknown): unknown {
  if (typeof value === "number") return Number.isInteger(value) ? BigInt(value) : value;
  if (Array.isArray(value)) return value.map(celValue);
  if (value !== null && typeof value === "object") return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, celValue(v)]));
  return value;
}

const listed = (values: readonly string[] | undefined, value: string) => (values ?? []).some((v) => v === "*" || v === value);

/** One admission rule against the request (pure): `*` is every resource but no subresource, `pods/*` every subresource of pods, `*\/*` all. */
export function ruleMatches(rule: RuleWithOperations, request: AdmissionAttributes, namespaced: boolean): boolean {
  if (!listed(rule.operations, request.operation)) return false;
  if (!listed(rule.apiGroups, request.resource.group) || !listed(rule.apiVersions, request.resource.version)) return false;
  const [resource, sub] = [request.resource.resource, request.subResource ?? ""];
  const resourceOk = (rule.resources ?? []).some((r) => {
    const [rr, rs = ""] = r.split("/");
    return (rr === "*" || rr === resource) && (rs === "*" || rs === sub);
  });
  if (!resourceOk) return false;
  if ((rule.resourceNames ?? []).length > 0 && !rule.resourceNames!.includes(request.name)) return false;
  const scope = rule.scope ?? "*";
  return scope === "*" || (scope === "Namespaced") === namespaced;
}

const selects = (selector: LabelSelectorObject | undefined, labels: Record<string, string> | undefined) =>
  selector === undefined || matchesLabels(fromSelectorObject(selector), labels ?? {});

/** matchConstraints or a binding's matchResources (pure); no resourceRules matches what the policy matched. */
export function resourcesMatch(match: MatchResources | undefined, request: AdmissionAttributes, objects: AdmissionObjects, requireRules: boolean): boolean {
  if (!match) return !requireRules;
  const namespaced = request.namespace !== undefined;
  const rules = match.resourceRules;
  if (rules === undefined ? requireRules : !rules.some((rule) => ruleMatches(rule, request, namespaced))) return false;
  if ((match.excludeResourceRules ?? []).some((rule) => ruleMatches(rule, request, namespaced))) return false;
  // A Namespace is matched by its own labels; other cluster-scoped objects are never skipped.
  const isNamespace = request.resource.group === "" && request.resource.resource === "namespaces";
  const namespaceLabels = isNamespace ? (objects.object ?? objects.oldObject)?.metadata.labels : objects.namespaceObject?.metadata.labels;
  if ((namespaced || isNamespace) && !selects(match.namespaceSelector, namespaceLabels)) return false;
  // The object selector matches when the new or the old object's labels do.
  if (match.objectSelector !== undefined) {
    const candidates = [objects.object, objects.oldObject].filter((o): o is KubeObject => o !== undefined);
    if (!candidates.some((o) => selects(match.objectSelector, o.metadata.labels))) return false;
  }
  return true;
}

/** The Status code a validation's reason answers (kube-apiserver's reasonToCode). */
export function reasonCode(reason: string): number {
  return ({ Forbidden: 403, Unauthorized: 401, RequestEntityTooLarge: 413, Invalid: 422 } as Record<string, number>)[reason] ?? 422;
}

function evaluate(expression: string, context: Record<string, unknown>): unknown {
  try {
    return cel.evaluate(expression, context);
  } catch (error) {
    throw new ExpressionError(`expression '${expression}' resulted in error: ${(error as Error).message.split("\n")[0]}`);
  }
}

class ExpressionError extends Error {}

interface Violation {
  message: string;
  reason: string;
}

/** A policy's first failing validation, or its failure when an expression errs; undefined: it passes or does not apply. */
function checkPolicy(policy: KubeObject, context: Record<string, unknown>): Violation | undefined {
  const spec = (policy.spec ?? {}) as Record<string, any>;
  const failClosed = (spec.failurePolicy ?? "Fail") === "Fail";
  try {
    for (const condition of (spec.matchConditions ?? []) as { name: string; expression: string }[]) {
      const result = evaluate(condition.expression, context);
      if (result !== true) return undefined;
    }
    const variables: Record<string, unknown> = {};
    for (const variable of (spec.variables ?? []) as { name: string; expression: string }[]) {
      variables[variable.name] = evaluate(variable.expression, { ...context, variables });
    }
    const scope = { ...context, variables };
    for (const validation of (spec.validations ?? []) as Validation[]) {
      if (evaluate(validation.expression, scope) === true) continue;
      let message = validation.message || `failed expression: ${validation.expression.trim()}`;
      if (validation.messageExpression) {
        try {
          const computed = cel.evaluate(validation.messageExpression, scope);
          if (typeof computed === "string" && computed.trim() !== "") message = computed;
        } catch {
          // kube-apiserver falls back to the static message when messageExpression fails.
        }
      }
      return { message, reason: validation.reason || "Invalid" };
    }
    return undefined;
  } catch (error) {
    if (!(error instanceof ExpressionError) || !failClosed) return undefined;
    return { message: error.message, reason: "Invalid" };
  }
}

/** Every binding's verdict on one write (pure). */
export function validateAdmission(request: AdmissionAttributes, objects: AdmissionObjects, stored: StoredPolicies): AdmissionResult {
  const warnings: string[] = [];
  const context = celValue({
    object: objects.object ?? null,
    oldObject: objects.oldObject ?? null,
    namespaceObject: objects.namespaceObject ?? null,
    params: null,
    // Like kube-apiserver's, the request omits an empty subResource and namespace: reading one is an error.
    request: { ...request, requestKind: request.kind, requestResource: request.resource },
  }) as Record<string, unknown>;
  const sorted = [...stored.bindings].sort((a, b) => (a.metadata.name! < b.metadata.name! ? -1 : 1));
  for (const binding of sorted) {
    const bindingSpec = (binding.spec ?? {}) as Record<string, any>;
    const policy = stored.policies.find((p) => p.metadata.name === bindingSpec.policyName);
    if (!policy) continue;
    const spec = (policy.spec ?? {}) as Record<string, any>;
    if (spec.paramKind) continue;
    if (!resourcesMatch(spec.matchConstraints, request, objects, true)) continue;
    if (!resourcesMatch(bindingSpec.matchResources, request, objects, false)) continue;
    const violation = checkPolicy(policy, context);
    if (!violation) continue;
    const actions = (bindingSpec.validationActions ?? []) as string[];
    const [policyName, bindingName] = [policy.metadata.name!, binding.metadata.name!];
    if (actions.includes("Warn")) warnings.push(`Validation failed for ValidatingAdmissionPolicy '${policyName}' with binding '${bindingName}': ${violation.message}`);
    if (actions.includes("Deny")) return { error: denied(request, objects, policyName, bindingName, violation), warnings };
  }
  return { warnings };
}

/**
 * admission.NewForbidden with the validation's reason and its code, as the policy dispatcher answers;
 * the name as extractResourceName finds it (a deletecollection's objects are admitted without one).
 */
function denied(request: AdmissionAttributes, objects: AdmissionObjects, policy: string, binding: string, violation: Violation): ApiError {
  const why = `ValidatingAdmissionPolicy '${policy}' with binding '${binding}' denied request: ${violation.message}`;
  const { group, resource } = request.resource;
  const qualified = group ? `${resource}.${group}` : resource;
  const name = request.name || objects.object?.metadata.name || objects.object?.metadata.generateName || "Unknown";
  const message = `${qualified} ${JSON.stringify(name)} is forbidden: ${why}`;
  return new ApiError(reasonCode(violation.reason), violation.reason, message, {
    name,
    ...(group && { group }),
    kind: resource,
    causes: [{ message: why }],
  });
}
