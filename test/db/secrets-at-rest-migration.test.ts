// Migration 0010 and the start-up step after it, on a database written the way berth did
// before secrets were sealed: migrate a PGlite database to just before 0010, store a webhook
// endpoint with clear-text secrets and a completed Idempotency-Key answer, apply the rest.
// The stored answer is forgotten; the secrets are sealed by the step, cleared, and still sign.
import { afterAll, beforeAll, expect, it } from "vitest";
import type { Db } from "../../db/client.ts";
import { idempotencyKeys, webhookEndpoints } from "../../db/schema.ts";
import { DEFAULT_APP_CONFIG } from "../../src/services/context.ts";
import { openEndpointSecrets, sealEndpointSecrets } from "../../src/services/webhooks/endpoint-secrets.ts";
import { TEST_SECRET_KEYS } from "../support/secret-key.ts";
import { openBefore, type OlderSchema } from "../support/older-schema.ts";

let older: OlderSchema;

beforeAll(async () => {
  older = await openBefore("0010_secrets_at_rest");
});

afterAll(async () => {
  await older?.close();
});

it("forgets clear-text stored answers and seals clear-text webhook secrets on the first start", async () => {
  const { db, client } = older;
  await older.migrateBefore();
  const at = new Date("2026-11-01T08:00:00.000Z").toISOString();
  const secret = "whsec_b2xkLWN1cnJlbnQtc2VjcmV0LTAxMjM0NTY3ODk=";
  const previous = "whsec_b2xkLXByZXZpb3VzLXNlY3JldC0wMTIzNDU2Nzg=";
  // The tables as they were before 0010: plain SQL.
  await client.query(
    `insert into webhook_endpoints (id, project_id, url, event_types, description, enabled, secret, previous_secret,
       previous_secret_expires_at, start_seq, resource_version, created_at, updated_at)
     values ('whk_old', null, 'https://hooks.example.com/in', '[]', '', true, $1, $2, $3, 0, nextval('resource_version_seq')::bigint, $3, $3)`,
    [secret, previous, at],
  );
  await client.query(
    `insert into idempotency_keys (principal, key, fingerprint, completed, response_status, response_headers, response_body, created_at, expires_at)
     values ('user:key_x', 'k-done', 'f', true, 201, '{}', '{"token":"bp_cleartext"}', $1, $1),
            ('user:key_x', 'k-running', 'f', false, null, null, null, $1, $1)`,
    [at],
  );

  await older.migrateRest();
  expect((await db.select().from(idempotencyKeys)).map((row) => row.key)).toEqual(["k-running"]);

  const ctx = { db: db as unknown as Db, config: { ...DEFAULT_APP_CONFIG, secretKeys: TEST_SECRET_KEYS } };
  expect(await sealEndpointSecrets(ctx)).toBe(1);
  const [row] = await db.select().from(webhookEndpoints);
  expect(row).toMatchObject({ secret: null, previousSecret: null });
  expect(JSON.stringify(row)).not.toContain(secret);
  expect(JSON.stringify(row)).not.toContain(previous);
  expect(await openEndpointSecrets(ctx, row!)).toEqual({ secret, previousSecret: previous });
});
