// PATCH: an RFC 7396 merge patch on the stored, defaulted spec and on labels.
import type { DeploymentPatch } from "../../domain/deployment.ts";
import type { WrittenDeployment } from "./deployment-view.ts";
import { applyMergePatch } from "../../domain/merge-patch.ts";
import type { ServiceContext } from "../context.ts";
import type { DeploymentAddress } from "./find-deployment.ts";
import { writeDeployment } from "./write-deployment.ts";

export async function patchDeployment({
  ctx,
  input,
}: {
  ctx: ServiceContext;
  input: { address: DeploymentAddress; ifMatch?: string; patch: DeploymentPatch };
}): Promise<WrittenDeployment> {
  return writeDeployment(ctx, {
    address: input.address,
    ifMatch: input.ifMatch,
    build: (current) => ({
      rawSpec: input.patch.spec === undefined ? current.spec : applyMergePatch(current.spec, input.patch.spec, "/spec"),
      rawLabels: input.patch.labels === undefined ? current.labels : applyMergePatch(current.labels, input.patch.labels, "/labels"),
    }),
  });
}
