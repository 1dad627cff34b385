// /v1/webhooks: signed lifecycle webhooks (docs/design.md §3.3, §10). One file per verb.
import type { OpenAPIHono } from "@hono/zod-openapi";
import type { AppEnv } from "../../src/api/env.ts";
import { registerCreateWebhook } from "./create.ts";
import { registerDeleteWebhook } from "./delete.ts";
import { registerListWebhookDeliveries } from "./deliveries.ts";
import { registerGetWebhook } from "./get.ts";
import { registerListWebhooks } from "./list.ts";
import { registerPatchWebhook } from "./patch.ts";
import { registerRedeliverWebhook } from "./redeliver.ts";
import { registerRotateWebhookSecret } from "./rotate-secret.ts";
import { registerTestWebhook } from "./test.ts";

export function registerWebhookRoutes(app: OpenAPIHono<AppEnv>) {
  registerCreateWebhook(app);
  registerListWebhooks(app);
  registerGetWebhook(app);
  registerPatchWebhook(app);
  registerDeleteWebhook(app);
  registerRotateWebhookSecret(app);
  registerTestWebhook(app);
  registerListWebhookDeliveries(app);
  registerRedeliverWebhook(app);
}
