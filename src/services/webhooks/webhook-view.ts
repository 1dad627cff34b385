// Rows to API shapes. The secret never leaves through these: only the create and rotate
// answers add it.
import type { WebhookAttemptRow, WebhookDeliveryRow } from "../../../db/queries/webhook-deliveries.ts";
import type { WebhookEndpointRow } from "../../../db/queries/webhooks.ts";
import type { DeliveryStatus, Webhook, WebhookDelivery } from "../../domain/webhooks.ts";

export function toWebhook(row: WebhookEndpointRow, now?: Date): Webhook {
  const previousLive = row.previousSecretExpiresAt && (!now || row.previousSecretExpiresAt > now);
  return {
    id: row.id,
    ...(row.projectId ? { projectId: row.projectId } : {}),
    url: row.url,
    eventTypes: row.eventTypes,
    description: row.description,
    enabled: row.enabled,
    ...(!row.enabled && row.disabledReason ? { disabledReason: row.disabledReason as Webhook["disabledReason"] } : {}),
    ...(row.failingSince ? { failingSince: row.failingSince.toISOString() } : {}),
    ...(previousLive ? { previousSecretExpiresAt: row.previousSecretExpiresAt!.toISOString() } : {}),
    resourceVersion: row.resourceVersion,
    createdAt: row.createdAt.toISOString(),
    updatedAt: row.updatedAt.toISOString(),
  };
}

export function etagOfWebhook(resourceVersion: number): string {
  return `"${resourceVersion}"`;
}

export function toDelivery(row: WebhookDeliveryRow, attempts: WebhookAttemptRow[]): WebhookDelivery {
  return {
    id: row.id,
    eventId: row.eventId,
    eventType: row.eventType,
    status: row.status as DeliveryStatus,
    attempts: attempts.map((attempt) => ({
      attemptedAt: attempt.attemptedAt.toISOString(),
      ...(attempt.statusCode !== null ? { statusCode: attempt.statusCode } : {}),
      latencyMs: attempt.latencyMs,
      ...(attempt.responseSnippet !== null ? { responseSnippet: attempt.responseSnippet } : {}),
      ...(attempt.error !== null ? { error: attempt.error } : {}),
    })),
    ...(row.status === "pending" && row.nextAttemptAt ? { nextAttemptAt: row.nextAttemptAt.toISOString() } : {}),
    createdAt: row.createdAt.toISOString(),
  };
}
