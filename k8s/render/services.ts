// Services: one ClusterIP Service per role in front of its serving pods (the deployment's
// endpoint when there is no router), and one headless Service per multi-pod instance that
// gives its members stable DNS names (`<pod>.<deployment>-<role>-r<replica>`) before any of
// them is ready, so followers can reach the leader while the group forms.
import type { V1Service, V1ServicePort } from "@kubernetes/client-node";
import type { Role } from "../../src/domain/deployment-spec.ts";
import {
  instanceServiceName,
  isGroup,
  LABELS,
  namespaceName,
  PORTS,
  resolveOptions,
  roleServiceName,
} from "./names.ts";
import { findRole, roleLabels } from "./pods.ts";
import { specHashOf } from "./spec-hash.ts";
import type { RenderInput } from "./types.ts";

/** The ports members of an instance dial each other on (besides arbitrary ones: multi-host vLLM DP dials peers on any port, docs/design.md §5.1). */
function rendezvousPorts(input: RenderInput, role: Role): V1ServicePort[] {
  if (role.command.length > 0) return [];
  if (role.elastic) return [{ name: "ray-gcs", port: PORTS.rayGcs, targetPort: PORTS.rayGcs, protocol: "TCP" }];
  const engine = input.deployment.spec.engine.name;
  const port =
    engine === "sglang"
      ? PORTS.sglangDistInit
      : role.parallelism.data > 1
        ? PORTS.vllmDataParallelRpc
        : PORTS.vllmMaster;
  return [{ name: "rendezvous", port, targetPort: port, protocol: "TCP" }];
}

/** The role's ClusterIP Service: selects the role's serving pods on the engine port. */
export function renderRoleService(input: RenderInput, roleName: string): V1Service {
  const { deployment } = input;
  const role = findRole(deployment.spec, roleName);
  const options = resolveOptions(deployment.spec, deployment.name, input.options);
  const ports: V1ServicePort[] = [{ name: "http", port: options.enginePort, targetPort: "http", protocol: "TCP" }];
  if (deployment.spec.engine.name === "sglang" && role.kind === "prefill" && role.command.length === 0) {
    ports.push({ name: "bootstrap", port: PORTS.sglangBootstrap, targetPort: "bootstrap", protocol: "TCP" });
  }
  return {
    apiVersion: "v1",
    kind: "Service",
    metadata: {
      name: roleServiceName(deployment.name, role.name),
      namespace: namespaceName(deployment.projectName),
      labels: roleLabels(input, role, specHashOf(deployment.spec, role.name, options)),
    },
    spec: {
      type: "ClusterIP",
      selector: { [LABELS.deploymentId]: deployment.id, [LABELS.role]: role.name, [LABELS.serving]: "true" },
      ports,
    },
  };
}

/** The headless Service of one multi-pod instance, or undefined for a single-pod role. */
export function renderInstanceService(input: RenderInput, roleName: string, replica: number): V1Service | undefined {
  const { deployment } = input;
  const role = findRole(deployment.spec, roleName);
  if (!isGroup(role)) return undefined;
  const options = resolveOptions(deployment.spec, deployment.name, input.options);
  return {
    apiVersion: "v1",
    kind: "Service",
    metadata: {
      name: instanceServiceName(deployment.name, role.name, replica),
      namespace: namespaceName(deployment.projectName),
      labels: { ...roleLabels(input, role, specHashOf(deployment.spec, role.name, options)), [LABELS.replica]: String(replica) },
    },
    spec: {
      clusterIP: "None",
      // Members resolve each other while starting, long before readiness.
      publishNotReadyAddresses: true,
      selector: { [LABELS.deploymentId]: deployment.id, [LABELS.role]: role.name, [LABELS.replica]: String(replica) },
      ports: [{ name: "http", port: options.enginePort, targetPort: options.enginePort, protocol: "TCP" }, ...rendezvousPorts(input, role)],
    },
  };
}
