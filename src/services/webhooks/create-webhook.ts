// Creates an endpoint and returns its signing secret, once. A project-bound key implies its
// project; an installation admin names one or, omitting it, creates an installation-wide
// endpoint that receives every project's events. Creating sends nothing.
import { findProjectById } from "../../../db/queries/projects.ts";
import { countWebhookEndpoints, insertWebhookEndpoint, lockWebhookEndpointCreation } from "../../../db/queries/webhooks.ts";
import { Forbidden, InvalidSpec, LimitReached } from "../../domain/errors.ts";
import { newId } from "../../domain/ids.ts";
import { requireUser } from "../../domain/principal.ts";
import { newWebhookSecret, type WebhookCreate, type WebhookWithSecret } from "../../domain/webhooks.ts";
import type { ServiceContext } from "../context.ts";
import { sealEndpointSecret } from "./endpoint-secrets.ts";
import { admitWebhookUrl } from "./webhook-target.ts";
import { toWebhook } from "./webhook-view.ts";

export async function createWebhook({ ctx, input }: { ctx: ServiceContext; input: WebhookCreate }): Promise<WebhookWithSecret> {
  const user = requireUser(ctx.principal, "admin");
  if (user.projectId !== null && input.projectId !== undefined && input.projectId !== user.projectId) {
    throw new Forbidden(`This key is bound to project "${user.projectId}"; omit projectId or use a key of that project.`);
  }
  const projectId = user.projectId ?? input.projectId ?? null;
  if (projectId !== null && !(await findProjectById(ctx.db, projectId))) {
    throw new InvalidSpec("The webhook names a project that does not exist.", [
      { pointer: "/projectId", message: `no project with id "${projectId}"; list projects with GET /v1/projects` },
    ]);
  }
  const url = await admitWebhookUrl(ctx, input.url);
  const now = ctx.clock.now();
  const secret = newWebhookSecret();
  const id = newId("webhook");
  const secretSealed = await sealEndpointSecret(ctx, id, "secret", secret);
  const cap = ctx.config.rateLimits.webhooksPerProject;
  const row = await ctx.db.transaction(async (tx) => {
    // Counted under a lock held to commit, so racing creates cannot pass the cap together.
    await lockWebhookEndpointCreation(tx, projectId);
    const existing = await countWebhookEndpoints(tx, projectId);
    if (existing >= cap) {
      const where = projectId === null ? "installation-wide" : `in project "${projectId}"`;
      throw new LimitReached(
        `There are already ${existing} webhook endpoints ${where}, the cap (${cap}, BERTH_RATE_LIMIT_WEBHOOKS_PER_PROJECT); delete one or reuse one for more event types.`,
        existing,
        cap,
      );
    }
    return insertWebhookEndpoint(tx, {
      id,
      projectId,
      url,
      eventTypes: [...new Set(input.eventTypes)],
      description: input.description,
      enabled: input.enabled,
      disabledReason: input.enabled ? null : "user",
      secret: null,
      previousSecret: null,
      secretSealed,
      previousSecretSealed: null,
      previousSecretExpiresAt: null,
      failingSince: null,
      createdAt: now,
      updatedAt: now,
    });
  });
  return { ...toWebhook(row, now), secret };
}
