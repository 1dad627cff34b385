// Webhook endpoints and their deliveries (docs/design.md §3.3, §10): request and response shapes,
// the body every delivery carries, and the pure fan-out rule deciding which endpoints an
// event goes to. Signing and sending live in src/services/webhooks.
import { z } from "zod";
import { strictObject } from "./deployment-spec.ts";
import { SUBSCRIBABLE_EVENT_TYPES, type EventType } from "./events.ts";
import { LIMITS, boundedInt, counter, id, timestamp } from "./limits.ts";

export const WILDCARD = "*";
const SUBSCRIPTIONS = [...SUBSCRIBABLE_EVENT_TYPES, WILDCARD] as const;

const EventTypeFilter = z
  .array(z.enum(SUBSCRIPTIONS))
  .min(1)
  .max(SUBSCRIPTIONS.length)
  .describe('Event types to receive, or ["*"] for every type (webhook.test is sent only by the test verb, whatever this says)');

const WebhookUrl = z
  .string()
  .min(1)
  .max(2048)
  .describe("Where deliveries are POSTed: https (or http); must resolve to public addresses unless the installation allows private ones");

const Description = z.string().max(512).describe("What the endpoint is for");

export const WebhookCreate = strictObject({
  projectId: z
    .string()
    .max(64)
    .optional()
    .describe("The project whose events it receives; implied by a project-bound key. An installation admin may omit it to receive every project's events."),
  url: WebhookUrl,
  eventTypes: EventTypeFilter,
  description: Description.default(""),
  enabled: z.boolean().default(true),
}).meta({ id: "WebhookCreate" });
export type WebhookCreate = z.infer<typeof WebhookCreate>;

export const WebhookPatch = strictObject({
  url: WebhookUrl.optional(),
  eventTypes: EventTypeFilter.optional(),
  description: Description.optional(),
  enabled: z.boolean().optional().describe("true re-enables an endpoint that was disabled (it forgets why); false pauses deliveries"),
}).meta({ id: "WebhookPatch" });
export type WebhookPatch = z.infer<typeof WebhookPatch>;

export const WebhookDisabledReason = z
  .enum(["user", "gone", "failing"])
  .describe("user: disabled by a PATCH; gone: the receiver answered 410; failing: every attempt failed for 3 days");

export const Webhook = z
  .object({
    id: id().describe("whk_…"),
    projectId: z.string().max(LIMITS.id).optional().describe("Absent for an installation-wide endpoint, which receives every project's events"),
    url: z.string().max(LIMITS.url),
    eventTypes: z.array(z.string().max(LIMITS.name)).max(LIMITS.mapEntries),
    description: z.string().max(LIMITS.text),
    enabled: z.boolean().describe("Disabled endpoints receive nothing; their pending deliveries wait until re-enabled"),
    disabledReason: WebhookDisabledReason.optional(),
    failingSince: timestamp().optional().describe("Since when every attempt has failed; absent while healthy"),
    previousSecretExpiresAt: timestamp()
      .optional()
      .describe("After a rotation, until when deliveries are signed with the previous secret as well"),
    resourceVersion: counter(),
    createdAt: timestamp(),
    updatedAt: timestamp(),
  })
  .meta({ id: "Webhook" });
export type Webhook = z.infer<typeof Webhook>;

export const WebhookWithSecret = Webhook.extend({
  secret: z
    .string()
    .max(LIMITS.token)
    .regex(/^whsec_[A-Za-z0-9+/=]+$/)
    .describe("The signing secret (whsec_…, Standard Webhooks). Shown only in the create and rotate answers; store it now."),
}).meta({ id: "WebhookWithSecret" });
export type WebhookWithSecret = z.infer<typeof WebhookWithSecret>;

export const DELIVERY_STATUSES = ["pending", "succeeded", "failed"] as const;
export type DeliveryStatus = (typeof DELIVERY_STATUSES)[number];

export const WebhookAttempt = z
  .object({
    attemptedAt: timestamp(),
    statusCode: boundedInt(100, 599).optional().describe("The receiver's HTTP status; absent when no response came"),
    latencyMs: counter().describe("From sending to the response headers (or to the error)"),
    responseSnippet: z.string().max(LIMITS.text).optional().describe("The first KiB of the response body"),
    error: z
      .string()
      .max(LIMITS.text)
      .optional()
      .describe(
        "Why the attempt failed without a usable answer, as a class: connection_refused, connection_reset, timeout, dns_failure, tls_error, host_unreachable, url_refused, address_refused, connection_failed (never the connection error's text); or that a redirect was not followed",
      ),
  })
  .meta({ id: "WebhookAttempt" });
export type WebhookAttempt = z.infer<typeof WebhookAttempt>;

export const WebhookDelivery = z
  .object({
    id: id().describe("dlv_…"),
    eventId: z.string().max(LIMITS.id).describe("evt_…; also the webhook-id header of every attempt"),
    eventType: z.string().max(LIMITS.text),
    status: z.enum(DELIVERY_STATUSES),
    attempts: z.array(WebhookAttempt).describe("Oldest first"),
    nextAttemptAt: timestamp().optional().describe("When a pending delivery is tried next"),
    createdAt: timestamp(),
  })
  .meta({ id: "WebhookDelivery" });
export type WebhookDelivery = z.infer<typeof WebhookDelivery>;

export const DispatchResult = z
  .object({
    fannedOut: counter().describe("Deliveries created from new events"),
    attempted: counter(),
    succeeded: counter(),
    failed: counter().describe("Attempts that did not succeed (the delivery may still be retried)"),
  })
  .meta({ id: "DispatchResult" });
export type DispatchResult = z.infer<typeof DispatchResult>;

/** The JSON body of every delivery (Standard Webhooks): `{ type, timestamp, data }`. */
export interface WebhookPayload {
  type: EventType;
  timestamp: string;
  data: unknown;
}

export function webhookPayloadSchema<T extends z.ZodType>(type: EventType, data: T) {
  return z.object({
    type: z.literal(type),
    timestamp: timestamp().describe("When the event occurred"),
    data,
  });
}

/** The part of an endpoint the fan-out rule reads. */
export interface EndpointFilter {
  id: string;
  projectId: string | null;
  eventTypes: readonly string[];
  /** Events at or below this seq predate the endpoint and are never sent to it. */
  startSeq: number;
}

/**
 * Whether an event goes to an endpoint: after the endpoint was created, in its project (an
 * installation-wide endpoint takes every project's events and the installation's own), and
 * of a listed type or `*`. webhook.test is never fanned out: only the test verb sends it.
 */
export function endpointWants(endpoint: EndpointFilter, event: { seq: number; type: string; projectId: string | null }): boolean {
  if (event.seq <= endpoint.startSeq || event.type === "webhook.test") return false;
  if (endpoint.projectId !== null && endpoint.projectId !== event.projectId) return false;
  return endpoint.eventTypes.includes(WILDCARD) || endpoint.eventTypes.includes(event.type);
}

/** A Standard Webhooks secret: `whsec_` and 32 random bytes in base64. */
export function newWebhookSecret(): string {
  const bytes = new Uint8Array(32);
  crypto.getRandomValues(bytes);
  return `whsec_${btoa(String.fromCharCode(...bytes))}`;
}
