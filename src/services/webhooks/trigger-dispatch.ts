// POST /v1/internal/dispatch: one dispatcher pass on request, for installations without a
// long-running process (a serverless cron calls it). Installation admins only.
import { requireInstallationAdmin } from "../../domain/principal.ts";
import type { ServiceContext } from "../context.ts";
import { dispatchWebhooks, type DispatchOutcome } from "./dispatch-webhooks.ts";

export async function triggerDispatch({ ctx, input }: { ctx: ServiceContext; input: { limit?: number } }): Promise<DispatchOutcome> {
  requireInstallationAdmin(ctx.principal);
  return dispatchWebhooks({ ctx, input: { limit: input.limit } });
}
