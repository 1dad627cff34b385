// Standard Webhooks signing: webhook-id is the event id (the same on every attempt, so
// receivers can deduplicate), webhook-timestamp the attempt's time, and webhook-signature
// one `v1,<base64 HMAC-SHA256 of id.timestamp.body>` per live secret, space-separated —
// the new secret first, then the previous one for 24 h after a rotation.
import { Webhook } from "standardwebhooks";

export function signatureHeader(secrets: readonly string[], id: string, timestamp: Date, body: string): string {
  return secrets.map((secret) => new Webhook(secret).sign(id, timestamp, body)).join(" ");
}

export function deliveryHeaders(secrets: readonly string[], id: string, timestamp: Date, body: string): Record<string, string> {
  return {
    "content-type": "application/json",
    "user-agent": "berth-webhooks/1",
    "webhook-id": id,
    "webhook-timestamp": String(Math.floor(timestamp.getTime() / 1000)),
    "webhook-signature": signatureHeader(secrets, id, timestamp, body),
  };
}
