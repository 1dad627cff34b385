// A deployment's whole desired object set at its spec's counts: the project namespace, every
// instance's pods, role and instance Services, the router's objects and the NetworkPolicies. The agent's planner
// decides what to create or delete from it; to create one instance or one elastic rank it calls
// renderInstancePods / renderMemberPod instead.
import { renderClaims } from "./claims.ts";
import type { V1Namespace, V1Pod, V1Service } from "@kubernetes/client-node";
import { LABELS, MANAGED_BY, namespaceName, POD_SECURITY_LABELS } from "./names.ts";
import { renderDeploymentPolicies, renderNamespacePolicies } from "./network-policies.ts";
import { renderInstancePods } from "./pods.ts";
import { renderRouterObjects } from "./router.ts";
import { renderInstanceService, renderRoleService } from "./services.ts";
import type { RenderedDeployment, RenderInput } from "./types.ts";

/** The project's namespace (shared by its deployments, so it carries no deployment labels), with its Pod Security labels. */
export function renderNamespace(projectName: string): V1Namespace {
  return {
    apiVersion: "v1",
    kind: "Namespace",
    metadata: { name: namespaceName(projectName), labels: { [LABELS.managedBy]: MANAGED_BY, [LABELS.project]: projectName, ...POD_SECURITY_LABELS } },
  };
}

export function renderDeployment(input: RenderInput): RenderedDeployment {
  const { deployment } = input;
  const pods: V1Pod[] = [];
  const services: V1Service[] = [];
  for (const role of deployment.spec.roles) {
    services.push(renderRoleService(input, role.name));
    for (let replica = 0; replica < role.replicas; replica++) {
      const headless = renderInstanceService(input, role.name, replica);
      if (headless) services.push(headless);
      pods.push(...renderInstancePods(input, role.name, replica));
    }
  }
  return {
    namespace: renderNamespace(deployment.projectName),
    pods,
    services,
    routerObjects: renderRouterObjects(input),
    claims: renderClaims(input),
    networkPolicies: [...renderNamespacePolicies(deployment.projectName), ...renderDeploymentPolicies(input)],
  };
}
