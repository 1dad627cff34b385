// The notification hub on a real database: wake-ups by NOTIFY with no lost notice between a
// poll and the wait after it, holds that end on a revocation notice, and the revalidation
// backstop that ends holds whose principal stopped working without a notice.
import { sql } from "drizzle-orm";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { CHANGES_CHANNEL } from "../../db/queries/change-log.ts";
import { REVOCATIONS_CHANNEL } from "../../db/queries/revocations.ts";
import { NotificationHub } from "../../src/services/notifications/notification-hub.ts";
import { createTestApi, type TestApi } from "../support/api-harness.ts";

describe.each(["pglite", "postgres"] as const)("notification hub on %s", (driver) => {
  let api: TestApi;
  let hub: NotificationHub;
  const notify = (channel: string, payload = "") => api.database.db.execute(sql`select pg_notify(${channel}, ${payload})`);
  const settle = (ms = 100) => new Promise((resolve) => setTimeout(resolve, ms));

  beforeAll(async () => {
    api = await createTestApi(driver);
    hub = new NotificationHub({ db: api.database.db, clock: api.clock, listen: api.database.listen?.bind(api.database) });
    expect(await hub.start()).toBe(true);
  });
  afterAll(async () => {
    await hub?.close();
    await api?.close();
  });

  it("wakes a waiter on a notice of its channel, and at once for a notice that came before the wait", async () => {
    const seen = hub.count(CHANGES_CHANNEL);
    const waiting = hub.waitForChange(CHANGES_CHANNEL, seen, 30_000);
    await notify(CHANGES_CHANNEL);
    await waiting;
    expect(hub.count(CHANGES_CHANNEL)).toBeGreaterThan(seen);

    // The notice arrives between the poll (which read `before`) and the wait.
    const before = hub.count(CHANGES_CHANNEL);
    await notify(CHANGES_CHANNEL);
    for (let i = 0; i < 50 && hub.count(CHANGES_CHANNEL) === before; i++) await settle(20);
    const started = Date.now();
    await hub.waitForChange(CHANGES_CHANNEL, before, 30_000);
    expect(Date.now() - started).toBeLessThan(1000);
  });

  it("lets a waiter sleep through another channel's notices until its timer ends", async () => {
    let woke = false;
    const waiting = hub.waitForChange(CHANGES_CHANNEL, hub.count(CHANGES_CHANNEL), 400).then(() => (woke = true));
    await notify("berth_events");
    await settle(150);
    expect(woke).toBe(false);
    await waiting;
    expect(woke).toBe(true);
  });

  it("aborts every hold of a principal named in a revocation notice, and only those", async () => {
    const forgotten: string[] = [];
    hub.onRevocation((id) => forgotten.push(id));
    const first = hub.hold({ kind: "user", keyId: "key_revoked", role: "viewer", projectId: null });
    const second = hub.hold({ kind: "user", keyId: "key_revoked", role: "viewer", projectId: null });
    const other = hub.hold({ kind: "agent", credentialId: "agc_other", clusterId: "clu_x" });
    await notify(REVOCATIONS_CHANNEL, "key_revoked");
    for (let i = 0; i < 50 && !first.signal.aborted; i++) await settle(20);
    expect([first.signal.aborted, second.signal.aborted, other.signal.aborted]).toEqual([true, true, false]);
    expect(forgotten).toContain("key_revoked");
    other.release();
    first.release();
  });

  it("revalidation ends holds whose key was revoked or credential expired without a notice", async () => {
    const keyId = (await api.call("POST", "/v1/api-keys", { body: { name: "held", role: "viewer" } })).body.id as string;
    const agent = await api.createAgent("hub-agent");
    const credential = (await api.database.db.execute(
      sql`select id from agent_credentials where cluster_id = ${agent.clusterId}`,
    )) as unknown as { rows: Array<{ id: string }> };
    const credentialId = credential.rows[0]!.id;
    const keyHold = hub.hold({ kind: "user", keyId, role: "viewer", projectId: null });
    const agentHold = hub.hold({ kind: "agent", credentialId, clusterId: agent.clusterId });
    const adminHold = hub.hold({ kind: "user", keyId: "admin-token", role: "admin", projectId: null });

    await hub.revalidate();
    expect([keyHold.signal.aborted, agentHold.signal.aborted, adminHold.signal.aborted]).toEqual([false, false, false]);

    await api.database.db.execute(sql`update api_keys set revoked_at = now() where id = ${keyId}`);
    await api.database.db.execute(sql`update agent_credentials set expires_at = ${api.clock.now().toISOString()}::timestamptz where id = ${credentialId}`);
    await hub.revalidate();
    expect([keyHold.signal.aborted, agentHold.signal.aborted, adminHold.signal.aborted]).toEqual([true, true, false]);
    adminHold.release();
  });
});
