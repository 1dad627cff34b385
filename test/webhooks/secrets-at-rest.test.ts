// Webhook signing secrets at rest (docs/design.md §14.3), on PGlite and PostgreSQL: a created
// or rotated secret is stored sealed only; clear text from before sealing is sealed by the
// start-up step and cleared; after a key rotation the step re-seals under the new key; a
// sealed value copied to another endpoint does not open.
import { eq } from "drizzle-orm";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { webhookEndpoints } from "../../db/schema.ts";
import { loadKeyring, sealedKeyId } from "../../src/domain/secret-envelope.ts";
import { DEFAULT_APP_CONFIG } from "../../src/services/context.ts";
import { openEndpointSecrets, sealEndpointSecrets } from "../../src/services/webhooks/endpoint-secrets.ts";
import { createTestApi, TEST_SECRET_KEYS, type TestApi } from "../support/api-harness.ts";
import type { WebhookTransport } from "../../src/services/webhooks/transport.ts";
import { TEST_SECRET_KEY } from "../support/secret-key.ts";

/** Never touches the network (creating an endpoint resolves its host; nothing is sent here). */
const offlineTransport: WebhookTransport = {
  resolve: async () => ["93.184.216.34"],
  send: async () => ({ status: 204, headers: {}, bodySnippet: "", latencyMs: 1 }),
};
const TEST_KEY_BYTES = new Uint8Array(Buffer.from(TEST_SECRET_KEY, "base64"));
const OTHER_KEY_BYTES = new Uint8Array(32).fill(7);

describe.each(["pglite", "postgres"] as const)("webhook secrets at rest on %s", (driver) => {
  let api: TestApi;
  beforeAll(async () => {
    api = await createTestApi(driver, {}, { webhookTransport: offlineTransport });
  });
  afterAll(async () => {
    await api?.close();
  });

  const create = async () => {
    const res = await api.call("POST", "/v1/webhooks", { body: { url: "https://hooks.example.com/in", eventTypes: ["deployment.updated"] } });
    expect(res.status, JSON.stringify(res.body)).toBe(201);
    return res.body as { id: string; secret: string };
  };
  const row = async (id: string) => (await api.database.db.select().from(webhookEndpoints).where(eq(webhookEndpoints.id, id)))[0]!;
  const ctxWith = (secretKeys = TEST_SECRET_KEYS) => ({ db: api.database.db, config: { ...DEFAULT_APP_CONFIG, secretKeys } });

  it("stores a created and a rotated secret sealed, never in clear text", async () => {
    const created = await create();
    const afterCreate = await row(created.id);
    expect(afterCreate).toMatchObject({ secret: null, previousSecret: null, previousSecretSealed: null });
    expect(afterCreate.secretSealed).toMatch(/^s1\./);
    expect(JSON.stringify(afterCreate)).not.toContain(created.secret);

    const rotated = await api.call("POST", `/v1/webhooks/${created.id}/rotate-secret`);
    expect(rotated.status, JSON.stringify(rotated.body)).toBe(200);
    const afterRotate = await row(created.id);
    expect(JSON.stringify(afterRotate)).not.toContain(created.secret);
    expect(JSON.stringify(afterRotate)).not.toContain(rotated.body.secret);
    expect(await openEndpointSecrets(ctxWith(), afterRotate)).toEqual({ secret: rotated.body.secret, previousSecret: created.secret });
  });

  it("seals clear text left from before, clears it, and leaves sealed rows alone", async () => {
    const legacy = await create();
    const untouched = await create();
    const untouchedBefore = await row(untouched.id);
    const old = { secret: "whsec_bGVnYWN5LWN1cnJlbnQtc2VjcmV0LTAxMjM0NQ==", previous: "whsec_bGVnYWN5LXByZXZpb3VzLXNlY3JldC0wMTIzNA==" };
    await api.database.db
      .update(webhookEndpoints)
      .set({ secret: old.secret, previousSecret: old.previous, secretSealed: null, previousSecretSealed: null })
      .where(eq(webhookEndpoints.id, legacy.id));

    expect(await sealEndpointSecrets(ctxWith())).toBe(1);
    const sealed = await row(legacy.id);
    expect(sealed).toMatchObject({ secret: null, previousSecret: null });
    expect(JSON.stringify(sealed)).not.toContain(old.secret);
    expect(await openEndpointSecrets(ctxWith(), sealed)).toEqual({ secret: old.secret, previousSecret: old.previous });
    expect(await row(untouched.id)).toEqual(untouchedBefore);
    expect(await sealEndpointSecrets(ctxWith())).toBe(0);
  });

  it("re-seals under the new key after a key rotation, so the old key can go", async () => {
    const endpoint = await create();
    const before = await row(endpoint.id);
    const rotatedKeys = await loadKeyring(OTHER_KEY_BYTES, [TEST_KEY_BYTES]);
    expect(await sealEndpointSecrets(ctxWith(rotatedKeys))).toBeGreaterThanOrEqual(1);
    const after = await row(endpoint.id);
    expect(sealedKeyId(after.secretSealed!)).toBe(rotatedKeys.current.id);
    const newKeyOnly = await loadKeyring(OTHER_KEY_BYTES);
    expect((await openEndpointSecrets(ctxWith(newKeyOnly), after)).secret).toBe(endpoint.secret);
    // Without the old key the value from before does not open: the error names the missing key, not the secret.
    const refused = openEndpointSecrets(ctxWith(newKeyOnly), before);
    await expect(refused).rejects.toThrow(/BERTH_SECRET_KEYS_PREVIOUS/);
    // Put the test key back in charge for the other tests.
    expect(await sealEndpointSecrets(ctxWith(await loadKeyring(TEST_KEY_BYTES, [OTHER_KEY_BYTES])))).toBeGreaterThanOrEqual(1);
  });

  it("does not open a sealed secret copied onto another endpoint", async () => {
    const a = await create();
    const b = await create();
    const sealedA = (await row(a.id)).secretSealed;
    await api.database.db.update(webhookEndpoints).set({ secretSealed: sealedA }).where(eq(webhookEndpoints.id, b.id));
    await expect(openEndpointSecrets(ctxWith(), await row(b.id))).rejects.toThrow(/did not authenticate/);
  });
});
