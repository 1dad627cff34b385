// Webhook delivery end to end: events → fan-out → signed POSTs to a real receiver on
// loopback (allow-private on, as tests must), driven by POST /v1/internal/dispatch with a
// clock the test moves. Signatures are checked with the standardwebhooks library, so the
// clock starts at the real time (the library refuses timestamps 5 minutes off).
import { Webhook } from "standardwebhooks";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { nodeWebhookTransport } from "../../src/api/webhook-transport-node.ts";
import { DEFAULT_APP_CONFIG } from "../../src/services/context.ts";
import { createTestApi, deploymentBody, TestClock, type TestApi } from "../support/api-harness.ts";
import { DRIVERS } from "../support/databases.ts";
import { startReceiver, type Answer, type Receiver, type ReceivedRequest } from "./support/receiver.ts";

const SCHEDULE = [5, 30, 60];

describe.each(DRIVERS)("webhook delivery on %s", (driver) => {
  let api: TestApi;
  let receiver: Receiver;
  let answers: Array<Answer | undefined> = [];
  let deployments = 0;

  beforeAll(async () => {
    api = await createTestApi(
      driver,
      { webhooks: { ...DEFAULT_APP_CONFIG.webhooks, allowPrivateAddresses: true, allowHttp: true, retryScheduleSeconds: SCHEDULE } },
      { clock: new TestClock(new Date()), webhookTransport: nodeWebhookTransport },
    );
    receiver = await startReceiver((_request, index) => answers[index] ?? { status: 204 });
  });
  afterEach(async () => {
    // Every endpoint of a test goes away with it, so later tests' events reach only their own.
    const all = await api.call("GET", "/v1/webhooks?limit=200");
    for (const webhook of all.body.items) await api.call("DELETE", `/v1/webhooks/${webhook.id}`);
    receiver.received.length = 0;
    answers = [];
    api.clock.set(new Date());
  });
  afterAll(async () => {
    await receiver?.close();
    await api?.close();
  });

  const dispatch = async () => {
    const res = await api.call("POST", "/v1/internal/dispatch");
    expect(res.status).toBe(200);
    return res.body as { fannedOut: number; attempted: number; succeeded: number; failed: number };
  };
  const createEndpoint = async (body: Record<string, unknown>) => {
    const res = await api.call("POST", "/v1/webhooks", {
      body: { url: receiver.url, eventTypes: ["*"], projectId: api.defaultProjectId, ...body },
    });
    expect(res.status).toBe(201);
    return res.body as { id: string; secret: string };
  };
  const createDeployment = async (projectId = api.defaultProjectId) => {
    const res = await api.call("POST", "/v1/deployments", { body: deploymentBody(`hooked-${++deployments}`, { projectId }) });
    expect(res.status).toBe(201);
    return res.body as { id: string; name: string };
  };
  const deliveriesOf = async (id: string) => (await api.call("GET", `/v1/webhooks/${id}/deliveries?limit=200`)).body.items as any[];
  const verify = (secret: string, request: ReceivedRequest) => new Webhook(secret).verify(request.body, request.headers) as any;

  it("signs each delivery per Standard Webhooks with the event as { type, timestamp, data }", async () => {
    const endpoint = await createEndpoint({ eventTypes: ["deployment.created"] });
    const deployment = await createDeployment();
    expect(await dispatch()).toMatchObject({ fannedOut: 1, attempted: 1, succeeded: 1, failed: 0 });
    expect(receiver.received).toHaveLength(1);
    const [request] = receiver.received;
    const payload = verify(endpoint.secret, request!);
    const [event] = (await api.call("GET", `/v1/events?deploymentId=${deployment.id}`)).body.items;
    expect(payload).toEqual({ type: "deployment.created", timestamp: event.occurredAt, data: event.data });
    expect(request!.headers["webhook-id"]).toBe(event.id);
    expect(request!.headers["content-type"]).toBe("application/json");
    expect(Math.abs(Number(request!.headers["webhook-timestamp"]) - api.clock.now().getTime() / 1000)).toBeLessThan(2);
    expect(request!.headers["webhook-signature"]).toMatch(/^v1,[A-Za-z0-9+/]+=*$/);
    expect(() => verify("whsec_" + btoa("another secret of enough length!"), request!)).toThrow();

    const [delivery] = await deliveriesOf(endpoint.id);
    expect(delivery).toMatchObject({ eventId: event.id, eventType: "deployment.created", status: "succeeded" });
    expect(delivery.attempts).toEqual([{ attemptedAt: expect.any(String), statusCode: 204, latencyMs: expect.any(Number) }]);
    expect(await dispatch()).toMatchObject({ fannedOut: 0, attempted: 0 });
  });

  it("retries a 500, then a 429 no sooner than its Retry-After, until the 200; the log shows each", async () => {
    answers = [
      { status: 500, body: "boom" },
      { status: 429, headers: { "Retry-After": "45" }, body: "slow down" },
      { status: 200, body: "ok" },
    ];
    const endpoint = await createEndpoint({ eventTypes: ["deployment.created"] });
    await createDeployment();
    expect(await dispatch()).toMatchObject({ attempted: 1, failed: 1 });
    api.clock.advance(4_000); // schedule[0] is 5 s ± 10%: not due yet
    expect(await dispatch()).toMatchObject({ attempted: 0 });
    api.clock.advance(2_000);
    expect(await dispatch()).toMatchObject({ attempted: 1, failed: 1 });
    api.clock.advance(34_000); // schedule[1] is 30 s ± 10%, but the receiver asked for 45 s
    expect(await dispatch()).toMatchObject({ attempted: 0 });
    api.clock.advance(11_500);
    expect(await dispatch()).toMatchObject({ attempted: 1, succeeded: 1 });

    expect(receiver.received.map((r) => r.headers["webhook-id"])).toEqual(Array(3).fill(receiver.received[0]!.headers["webhook-id"]));
    for (const request of receiver.received) expect(verify(endpoint.secret, request).type).toBe("deployment.created");
    const [delivery] = await deliveriesOf(endpoint.id);
    expect(delivery.status).toBe("succeeded");
    expect(delivery.attempts.map((a: { statusCode: number; responseSnippet: string }) => [a.statusCode, a.responseSnippet])).toEqual([
      [500, "boom"],
      [429, "slow down"],
      [200, "ok"],
    ]);
    const at = delivery.attempts.map((a: { attemptedAt: string }) => Date.parse(a.attemptedAt));
    expect(at[1] - at[0]).toBeGreaterThanOrEqual(4_500);
    expect(at[2] - at[1]).toBeGreaterThanOrEqual(45_000);
  });

  it("fails a delivery after the last scheduled retry, and redelivers it on request", async () => {
    answers = Array(SCHEDULE.length + 1).fill({ status: 503 });
    const endpoint = await createEndpoint({ eventTypes: ["deployment.created"] });
    await createDeployment();
    await dispatch();
    for (const step of SCHEDULE) {
      api.clock.advance(step * 1100 + 1);
      expect(await dispatch()).toMatchObject({ attempted: 1, failed: 1 });
    }
    api.clock.advance(120_000);
    expect(await dispatch()).toMatchObject({ attempted: 0 });
    let [delivery] = await deliveriesOf(endpoint.id);
    expect(delivery.status).toBe("failed");
    expect(delivery.attempts).toHaveLength(SCHEDULE.length + 1);
    expect((await api.call("GET", `/v1/webhooks/${endpoint.id}`)).body.failingSince).toEqual(expect.any(String));

    const redelivered = await api.call("POST", `/v1/webhooks/${endpoint.id}/deliveries/${delivery.id}/redeliver`);
    expect(redelivered.status).toBe(202);
    expect(redelivered.body).toMatchObject({ id: delivery.id, status: "pending" });
    expect(await dispatch()).toMatchObject({ attempted: 1, succeeded: 1 });
    [delivery] = await deliveriesOf(endpoint.id);
    expect(delivery.status).toBe("succeeded");
    expect(delivery.attempts).toHaveLength(SCHEDULE.length + 2);
    const ids = new Set(receiver.received.map((r) => r.headers["webhook-id"]));
    expect(ids.size).toBe(1);
    expect((await api.call("GET", `/v1/webhooks/${endpoint.id}`)).body).not.toHaveProperty("failingSince");
    const failedOnly = await api.call("GET", `/v1/webhooks/${endpoint.id}/deliveries?status=failed`);
    expect(failedOnly.body.items).toEqual([]);
  });

  it("disables an endpoint at once on 410 and tells other endpoints with webhook.disabled", async () => {
    answers = [{ status: 410, body: "gone for good" }];
    const gone = await createEndpoint({ url: `${receiver.url}/gone`, eventTypes: ["deployment.created"] });
    const watcher = await createEndpoint({ url: `${receiver.url}/watcher`, eventTypes: ["webhook.disabled"] });
    await createDeployment();
    expect(await dispatch()).toMatchObject({ attempted: 1, failed: 1 });
    const read = await api.call("GET", `/v1/webhooks/${gone.id}`);
    expect(read.body).toMatchObject({ enabled: false, disabledReason: "gone" });
    const [delivery] = await deliveriesOf(gone.id);
    expect(delivery.status).toBe("failed");

    expect(await dispatch()).toMatchObject({ fannedOut: 1, attempted: 1, succeeded: 1 });
    const notice = receiver.received.find((r) => r.path === "/hook/watcher")!;
    expect(verify(watcher.secret, notice)).toMatchObject({
      type: "webhook.disabled",
      data: { webhook: { id: gone.id }, reason: "gone", lastAttempt: { statusCode: 410 } },
    });
    await createDeployment();
    expect(await dispatch()).toMatchObject({ fannedOut: 0, attempted: 0 });
    expect(receiver.received).toHaveLength(2);
    const test = await api.call("POST", `/v1/webhooks/${gone.id}/test`);
    expect(test.status).toBe(409);
  });

  it("disables an endpoint whose attempts have all failed for 3 days", async () => {
    const endpoint = await createEndpoint({ eventTypes: ["deployment.created"] });
    answers = Array(50).fill({ status: 500 });
    await createDeployment();
    await dispatch();
    const failing = await api.call("GET", `/v1/webhooks/${endpoint.id}`);
    expect(failing.body).toMatchObject({ enabled: true, failingSince: api.clock.now().toISOString() });
    api.clock.advance(2 * 24 * 3600 * 1000);
    await createDeployment();
    await dispatch();
    expect((await api.call("GET", `/v1/webhooks/${endpoint.id}`)).body.enabled).toBe(true);
    api.clock.advance(24 * 3600 * 1000);
    await createDeployment();
    // The new event and the retries of the two earlier ones, all failing.
    expect(await dispatch()).toMatchObject({ attempted: 3, failed: 3 });
    const read = await api.call("GET", `/v1/webhooks/${endpoint.id}`);
    expect(read.body).toMatchObject({ enabled: false, disabledReason: "failing", failingSince: failing.body.failingSince });
    const events = (await api.call("GET", "/v1/events?type=webhook.disabled&limit=500")).body.items;
    expect(events.at(-1)).toMatchObject({ projectId: api.defaultProjectId, data: { webhook: { id: endpoint.id }, reason: "failing" } });
    // Re-enabling forgets the failure record.
    const enabled = await api.call("PATCH", `/v1/webhooks/${endpoint.id}`, { body: { enabled: true } });
    expect(enabled.body).not.toHaveProperty("failingSince");
    expect(enabled.body).not.toHaveProperty("disabledReason");
  });

  it("signs with both secrets for 24 h after a rotation, so either verifies", async () => {
    const endpoint = await createEndpoint({ eventTypes: ["deployment.created"] });
    await createDeployment();
    await dispatch();
    const rotated = await api.call("POST", `/v1/webhooks/${endpoint.id}/rotate-secret`);
    const fresh = rotated.body.secret as string;
    for (let i = 0; i < 3; i++) await createDeployment();
    await dispatch();
    expect(receiver.received).toHaveLength(4);
    const [before, ...after] = receiver.received;
    expect(before!.headers["webhook-signature"]!.split(" ")).toHaveLength(1);
    expect(() => verify(fresh, before!)).toThrow();
    verify(endpoint.secret, before!);
    for (const request of after) {
      const signatures = request.headers["webhook-signature"]!.split(" ");
      expect(signatures).toHaveLength(2);
      expect(signatures.every((s) => s.startsWith("v1,"))).toBe(true);
      expect(verify(endpoint.secret, request).type).toBe("deployment.created");
      expect(verify(fresh, request).type).toBe("deployment.created");
    }
    // After 24 h only the new secret signs.
    api.clock.advance(24 * 3600 * 1000 + 1);
    await createDeployment();
    await dispatch();
    const late = receiver.received.at(-1)!;
    const timestamp = new Date(Number(late.headers["webhook-timestamp"]) * 1000);
    expect(late.headers["webhook-signature"]).toBe(new Webhook(fresh).sign(late.headers["webhook-id"]!, timestamp, late.body));
  });

  it("fans out by project and type; installation endpoints get every project's events", async () => {
    const other = await api.createProject(`fan-${driver}-${Date.now() % 100000}`);
    const mine = await createEndpoint({ url: `${receiver.url}/mine`, eventTypes: ["deployment.created"] });
    const deletes = await createEndpoint({ url: `${receiver.url}/deletes`, eventTypes: ["deployment.deleted"] });
    const everything = await createEndpoint({ url: `${receiver.url}/all`, eventTypes: ["*"], projectId: undefined });
    void mine;
    void deletes;
    void everything;
    const a = await createDeployment();
    await createDeployment(other);
    await api.call("DELETE", `/v1/deployments/${a.id}`);
    await dispatch();
    const byPath = (path: string) => receiver.received.filter((r) => r.path === path).map((r) => JSON.parse(r.body).type);
    expect(byPath("/hook/mine")).toEqual(["deployment.created"]);
    expect(byPath("/hook/deletes")).toEqual(["deployment.deleted"]);
    expect(byPath("/hook/all").sort()).toEqual(["deployment.created", "deployment.created", "deployment.deleted"]);
  });

  it("sends nothing on create, webhook.test only on the test verb, and only to that endpoint", async () => {
    await createDeployment(); // before the endpoint exists: never sent to it
    const endpoint = await createEndpoint({ url: `${receiver.url}/tested`, eventTypes: ["*"] });
    const bystander = await createEndpoint({ url: `${receiver.url}/bystander`, eventTypes: ["*"] });
    void bystander;
    expect(await dispatch()).toMatchObject({ fannedOut: 0, attempted: 0 });
    const test = await api.call("POST", `/v1/webhooks/${endpoint.id}/test`);
    expect(test.status).toBe(202);
    expect(test.body).toMatchObject({ eventType: "webhook.test", status: "pending", attempts: [] });
    expect(await dispatch()).toMatchObject({ fannedOut: 0, attempted: 1, succeeded: 1 });
    expect(receiver.received.map((r) => r.path)).toEqual(["/hook/tested"]);
    expect(verify(endpoint.secret, receiver.received[0]!)).toMatchObject({
      type: "webhook.test",
      data: { webhook: { id: endpoint.id, url: `${receiver.url}/tested` } },
    });
    const [delivery] = await deliveriesOf(endpoint.id);
    expect(delivery).toMatchObject({ id: test.body.id, status: "succeeded", eventId: receiver.received[0]!.headers["webhook-id"] });
  });

  it("records a refused connection and does not follow redirects", async () => {
    answers = [{ status: 302, headers: { Location: "http://169.254.169.254/" } }];
    const redirect = await createEndpoint({ eventTypes: ["deployment.created"] });
    const closed = await createEndpoint({ url: "http://127.0.0.1:9/nothing-listens", eventTypes: ["deployment.created"] });
    await createDeployment();
    expect(await dispatch()).toMatchObject({ attempted: 2, failed: 2 });
    const [redirected] = await deliveriesOf(redirect.id);
    expect(redirected.status).toBe("pending");
    expect(redirected.attempts[0]).toMatchObject({ statusCode: 302, error: expect.stringContaining("redirects are not followed") });
    expect(receiver.received).toHaveLength(1);
    const [refused] = await deliveriesOf(closed.id);
    expect(refused.attempts[0]).toMatchObject({ error: "connection_refused" }); // the class, not the host and port
    expect(refused.attempts[0]).not.toHaveProperty("statusCode");
  });
});
