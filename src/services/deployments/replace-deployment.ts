// PUT: replaces spec and labels whole; name and project, if sent, must be the current ones.
import type { DeploymentReplace } from "../../domain/deployment.ts";
import type { WrittenDeployment } from "./deployment-view.ts";
import { InvalidSpec } from "../../domain/errors.ts";
import type { ServiceContext } from "../context.ts";
import type { DeploymentAddress } from "./find-deployment.ts";
import { findVisibleDeployment } from "./find-deployment.ts";
import { writeDeployment } from "./write-deployment.ts";

export async function replaceDeployment({
  ctx,
  input,
}: {
  ctx: ServiceContext;
  input: { address: DeploymentAddress; ifMatch?: string; body: DeploymentReplace };
}): Promise<WrittenDeployment> {
  const current = await findVisibleDeployment(ctx, input.address);
  const errors = [];
  if (input.body.name !== undefined && input.body.name !== current.name) {
    errors.push({ pointer: "/name", message: `names are immutable (this one is "${current.name}"); create a new deployment instead` });
  }
  if (input.body.projectId !== undefined && input.body.projectId !== current.projectId) {
    errors.push({ pointer: "/projectId", message: `a deployment cannot move between projects (it is in "${current.projectId}")` });
  }
  if (errors.length > 0) throw new InvalidSpec("The replacement changes identity fields.", errors);
  return writeDeployment(ctx, {
    address: { idOrName: current.id },
    ifMatch: input.ifMatch,
    build: () => ({ rawSpec: input.body.spec, rawLabels: input.body.labels ?? {} }),
  });
}
