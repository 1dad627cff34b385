// Retention on a real database: each table loses only what is past its window, pending webhook
// deliveries and what the fan-out has not reached keep their events, each cluster keeps its
// announced connection state, and the horizons name what went.
import { asc, sql } from "drizzle-orm";
import { afterEach, describe, expect, it } from "vitest";
import { readHorizon } from "../../db/queries/retention.ts";
import { deploymentTombstones, events, nextResourceVersion, operations, webhookAttempts, webhookDeliveries, webhookFanoutCursor } from "../../db/schema.ts";
import { runMaintenance } from "../../src/services/maintenance.ts";
import { DEFAULT_APP_CONFIG, type AppConfig } from "../../src/services/context.ts";
import { recordEvent } from "../../src/services/events/record-event.ts";
import { purgeRetention } from "../../src/services/retention/purge-retention.ts";
import { createTestApi, deploymentBody, type TestApi } from "../support/api-harness.ts";

const DAY = 24 * 60 * 60 * 1000;
const CONFIG: AppConfig = { ...DEFAULT_APP_CONFIG, webhooks: { ...DEFAULT_APP_CONFIG.webhooks, allowPrivateAddresses: true, allowHttp: true } };

describe.each(["pglite", "postgres"] as const)("retention on %s", (driver) => {
  let api: TestApi;
  afterEach(async () => {
    await api?.close();
  });

  const db = () => api.database.db;
  const ctx = (config: AppConfig = CONFIG) => ({ db: db(), clock: api.clock, config });
  const eventRows = async () => db().select({ seq: events.seq, id: events.id, type: events.type }).from(events).orderBy(asc(events.seq));
  const maxSeq = async () => Math.max(0, ...(await eventRows()).map((row) => row.seq));
  /** The dispatcher caught up: its cursor at the newest event. */
  const catchUpFanout = async () => {
    const lastSeq = await maxSeq();
    await db().insert(webhookFanoutCursor).values({ id: 1, lastSeq }).onConflictDoUpdate({ target: webhookFanoutCursor.id, set: { lastSeq } });
  };
  const create = async (name: string) => {
    const res = await api.call("POST", "/v1/deployments", { body: deploymentBody(name, { projectId: api.defaultProjectId }) });
    expect(res.status).toBe(201);
    return res.body.id as string;
  };
  const createdEventOf = async (deploymentId: string) =>
    (await db().select().from(events).where(sql`${events.deploymentId} = ${deploymentId} and ${events.type} = 'deployment.created'`))[0]!;
  const delivery = (id: string, endpointId: string, eventId: string, status: string) => ({
    id,
    endpointId,
    eventId,
    eventType: "deployment.created",
    status,
    nextAttemptAt: status === "pending" ? new Date(api.clock.now().getTime() + 60_000) : null,
    runAttempts: 1,
    leaseToken: null,
    createdAt: api.clock.now(),
    updatedAt: api.clock.now(),
  });
  const operation = (id: string, deploymentId: string, phase: string, finished: boolean) => ({
    id,
    deploymentId,
    projectId: api.defaultProjectId,
    kind: "restart",
    role: "main",
    replica: 0,
    phase,
    step: "done",
    steps: [],
    message: "",
    startedAt: api.clock.now(),
    finishedAt: finished ? api.clock.now() : null,
    resourceVersion: nextResourceVersion,
    createdAt: api.clock.now(),
    updatedAt: api.clock.now(),
  });

  it("purges each table past its window only, never a pending delivery or a cluster's announced state", async () => {
    api = await createTestApi(driver, CONFIG);
    const hook = await api.call("POST", "/v1/webhooks", { body: { url: "http://127.0.0.1:9/hook", eventTypes: ["*"] } });
    expect(hook.status).toBe(201);
    const endpointId = hook.body.id as string;

    // Day 0: a deployment created and deleted (no agent: removed at once, leaving a tombstone),
    // another that stays, and a cluster that went away and came back.
    const gone = await create("gone");
    expect((await api.call("DELETE", `/v1/deployments/${gone}`)).status).toBe(204);
    const stays = await create("stays");
    const oldDisconnect = await recordEvent(db(), api.clock.now(), { type: "cluster.disconnected", projectId: null, data: { clusterId: "cls_a" } });
    const announced = await recordEvent(db(), api.clock.now(), { type: "cluster.connected", projectId: null, data: { clusterId: "cls_a" } });
    const stone = (await db().select().from(deploymentTombstones))[0]!;
    const stayedEvent = await createdEventOf(stays);
    const goneEvent = await createdEventOf(gone);
    await db().insert(webhookDeliveries).values([
      delivery("del_sent", endpointId, stayedEvent.id, "succeeded"),
      delivery("del_given_up", endpointId, goneEvent.id, "failed"),
    ]);
    await db().insert(webhookAttempts).values({ deliveryId: "del_sent", attemptedAt: api.clock.now(), statusCode: 200, latencyMs: 3, responseSnippet: null, error: null });
    await db().insert(operations).values([operation("op_done", stays, "Succeeded", true), operation("op_running", stays, "Running", false)]);
    await catchUpFanout();

    // Day 8: past the events' and tombstones' 7 days, inside the deliveries' and operations' 30.
    api.clock.advance(8 * DAY);
    const fresh = await create("fresh");
    const freshEvent = await createdEventOf(fresh);
    await db().insert(webhookDeliveries).values(delivery("del_pending", endpointId, freshEvent.id, "pending"));
    await catchUpFanout();
    const firstPass = await purgeRetention({ ctx: ctx() });

    const kept = await eventRows();
    expect(kept.map((row) => row.id)).toEqual([announced.id, freshEvent.id]);
    expect(kept.map((row) => row.id)).not.toContain(oldDisconnect.id);
    expect(firstPass).toMatchObject({ events: 4, tombstones: 1, deliveries: 0, operations: 0 });
    // The horizon is the last purged seq (the announced connection event, kept, is after it).
    expect(await readHorizon(db(), "events")).toBe(oldDisconnect.seq);
    expect(await db().select().from(deploymentTombstones)).toEqual([]);
    expect(await readHorizon(db(), "deployment_tombstones")).toBe(stone.resourceVersion);
    expect((await db().select({ id: webhookDeliveries.id }).from(webhookDeliveries)).map((row) => row.id).sort()).toEqual(["del_given_up", "del_pending", "del_sent"]);

    // A finished delivery whose event went cannot be sent again.
    const redeliver = await api.call("POST", `/v1/webhooks/${endpointId}/deliveries/del_sent/redeliver`);
    expect(redeliver.status).toBe(409);
    expect(redeliver.body.detail).toMatch(/BERTH_RETENTION_EVENTS_HOURS/);

    // Day 31: finished deliveries (and their attempts) and finished operations go; the pending
    // delivery keeps its event although that event is 23 days old; the running operation stays.
    api.clock.advance(23 * DAY);
    await runMaintenance({ ctx: ctx() });
    expect((await db().select({ id: webhookDeliveries.id }).from(webhookDeliveries)).map((row) => row.id)).toEqual(["del_pending"]);
    expect(await db().select().from(webhookAttempts)).toEqual([]);
    expect((await db().select({ id: operations.id }).from(operations)).map((row) => row.id)).toEqual(["op_running"]);
    expect((await eventRows()).map((row) => row.id)).toEqual([announced.id, freshEvent.id]);
    expect(await readHorizon(db(), "events")).toBe(oldDisconnect.seq);
  });

  it("stops at the fan-out cursor, purges in bounded batches, and keeps everything with windows set to never", async () => {
    api = await createTestApi(driver, CONFIG);
    expect((await api.call("POST", "/v1/webhooks", { body: { url: "http://127.0.0.1:9/hook", eventTypes: ["*"] } })).status).toBe(201);
    for (let i = 0; i < 5; i++) await create(`d${i}`);
    const seqs = (await eventRows()).map((row) => row.seq);
    // The dispatcher has fanned out only the first three.
    await db().insert(webhookFanoutCursor).values({ id: 1, lastSeq: seqs[2]! });
    api.clock.advance(8 * DAY);

    const never: AppConfig = {
      ...CONFIG,
      retention: { ...CONFIG.retention, windows: { eventsHours: null, tombstonesHours: null, deliveriesHours: null, operationsHours: null } },
    };
    expect(await purgeRetention({ ctx: ctx(never) })).toEqual({ events: 0, tombstones: 0, deliveries: 0, operations: 0, idempotencyKeys: 0 });
    expect((await eventRows()).map((row) => row.seq)).toEqual(seqs);

    // Batches of 2, at most one per pass: the first pass takes two, the second the third, then
    // the cursor holds. (With the VACUUM an embedded database runs after purging.)
    const small: AppConfig = { ...CONFIG, retention: { ...CONFIG.retention, batchSize: 2, maxBatchesPerPass: 1, vacuumAfterPurge: true } };
    expect((await purgeRetention({ ctx: ctx(small) })).events).toBe(2);
    expect((await eventRows()).map((row) => row.seq)).toEqual(seqs.slice(2));
    expect((await purgeRetention({ ctx: ctx(small) })).events).toBe(1);
    expect((await purgeRetention({ ctx: ctx(small) })).events).toBe(0);
    expect((await eventRows()).map((row) => row.seq)).toEqual(seqs.slice(3));
    expect(await readHorizon(db(), "events")).toBe(seqs[2]);
  });

  it("two instances purging at once delete each row once", async () => {
    api = await createTestApi(driver, CONFIG);
    for (let i = 0; i < 6; i++) await create(`c${i}`);
    api.clock.advance(8 * DAY);
    const small: AppConfig = { ...CONFIG, retention: { ...CONFIG.retention, batchSize: 2 } };
    const [a, b] = await Promise.all([purgeRetention({ ctx: ctx(small) }), purgeRetention({ ctx: ctx(small) })]);
    expect(a.events + b.events).toBe(6);
    expect(await eventRows()).toEqual([]);
    // An emptied log still knows how far it was purged.
    expect(await readHorizon(db(), "events")).toBeGreaterThan(0);
  });
});
