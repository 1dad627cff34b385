import type { DeploymentRequestResource } from "../../domain/deployment-request.ts";
import type { ServiceContext } from "../context.ts";
import { toDeploymentRequest } from "./deployment-request-view.ts";
import { findVisibleDeploymentRequest } from "./find-deployment-request.ts";

export async function getDeploymentRequest({ ctx, input }: { ctx: ServiceContext; input: { id: string } }): Promise<DeploymentRequestResource> {
  return toDeploymentRequest(await findVisibleDeploymentRequest(ctx, input.id));
}
