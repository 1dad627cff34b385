import type { Deployment } from "../../domain/deployment.ts";
import type { ServiceContext } from "../context.ts";
import { toDeployment } from "./deployment-view.ts";
import { findVisibleDeployment, type DeploymentAddress } from "./find-deployment.ts";

export async function getDeployment({ ctx, input }: { ctx: ServiceContext; input: DeploymentAddress }): Promise<Deployment> {
  return toDeployment(await findVisibleDeployment(ctx, input));
}
