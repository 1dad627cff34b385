// POST /v1/deployments/{id}/rollback { generation }: a new generation carrying a retained
// revision's spec, through the PATCH write path (If-Match, admission with its identity
// checks, quota, capacity, deployment.updated, a revision with rollbackOf). What another
// writer owns stays as it is now (rollbackSpec, docs/decisions/0053). A target equal to the
// current spec writes nothing and answers the deployment as is, so a retry is harmless.
import { findRevision, retainedGenerations } from "../../../db/queries/revisions.ts";
import type { DeploymentSpec } from "../../domain/deployment-spec.ts";
import { NotFound } from "../../domain/errors.ts";
import { requireUser } from "../../domain/principal.ts";
import { describeRetained, rollbackSpec } from "../../domain/revisions.ts";
import type { ServiceContext } from "../context.ts";
import type { WrittenDeployment } from "./deployment-view.ts";
import type { DeploymentAddress } from "./find-deployment.ts";
import { writeDeployment } from "./write-deployment.ts";

export async function rollbackDeployment({
  ctx,
  input,
}: {
  ctx: ServiceContext;
  input: { address: DeploymentAddress; generation: number; ifMatch?: string };
}): Promise<WrittenDeployment> {
  requireUser(ctx.principal, "editor");
  let target: DeploymentSpec | undefined;
  return writeDeployment(ctx, {
    address: input.address,
    ifMatch: input.ifMatch,
    rollbackOf: input.generation,
    check: async (tx, current) => {
      const revision = await findRevision(tx, current.id, input.generation);
      if (!revision) {
        const retained = await retainedGenerations(tx, current.id);
        throw new NotFound(
          `Deployment "${current.name}" has no retained generation ${input.generation} (${describeRetained(retained)}); ` +
            `list them with GET /v1/deployments/${current.id}/revisions.`,
          { generation: input.generation, retained: retained ?? null },
        );
      }
      target = revision.spec as DeploymentSpec;
    },
    build: ({ spec, labels }) => ({ rawSpec: rollbackSpec(spec, target!), rawLabels: labels }),
  });
}
