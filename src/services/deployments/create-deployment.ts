// Creates a deployment: admission, then quota and insert in one transaction. With no
// agent yet it is Pending; the agent of its cluster takes it from there.
import { insertDeployment } from "../../../db/queries/deployments.ts";
import type { DeploymentCreate } from "../../domain/deployment.ts";
import { pendingStatus } from "../../domain/deployment-spec.ts";
import { Conflict } from "../../domain/errors.ts";
import { newId } from "../../domain/ids.ts";
import { requireUser } from "../../domain/principal.ts";
import { resolveTargetProject } from "../projects/resolve-target-project.ts";
import type { ServiceContext } from "../context.ts";
import { actorOf, recordEvent, summarize } from "../events/record-event.ts";
import { admitSpec, checkQuota } from "./admit-spec.ts";
import { checkCustomCommands } from "./check-custom-commands.ts";
import { toDeployment, type WrittenDeployment } from "./deployment-view.ts";
import { recordRevision } from "./record-revision.ts";

export async function createDeployment({ ctx, input }: { ctx: ServiceContext; input: DeploymentCreate }): Promise<WrittenDeployment> {
  const user = requireUser(ctx.principal, "editor");
  const projectId = await resolveTargetProject(ctx, user, input.projectId, "deployment");
  const { spec, clusterId, warnings } = await admitSpec(ctx.db, { name: input.name, parsed: input.spec });
  const now = ctx.clock.now();
  const row = await ctx.db.transaction(async (tx) => {
    await checkCustomCommands(tx, ctx.principal, projectId, spec);
    await checkQuota(tx, projectId, spec);
    const created = await insertDeployment(tx, {
      id: newId("deployment"),
      projectId,
      name: input.name,
      labels: input.labels ?? {},
      spec,
      status: pendingStatus(now),
      phase: "Pending",
      clusterId,
      deletionRequestedAt: null,
      generation: 1,
      createdAt: now,
      updatedAt: now,
    });
    if (created) {
      await recordEvent(tx, now, {
        type: "deployment.created",
        projectId,
        deploymentId: created.id,
        data: { deployment: summarize(created), actor: actorOf(ctx.principal) },
      });
      await recordRevision(tx, { row: created, actor: actorOf(ctx.principal), now });
    }
    return created;
  });
  if (!row) {
    throw new Conflict(`A deployment named "${input.name}" already exists in this project; choose another name or PATCH it.`);
  }
  return { deployment: toDeployment(row), warnings };
}
