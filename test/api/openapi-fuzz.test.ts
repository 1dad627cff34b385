// Every operation in openapi/openapi.json, fuzzed from its own declaration (design §14.8,
// decision 0072): fast-check builds valid requests from the declared parameters and request
// body schema and mutated ones (see test/support/openapi-requests.ts), sent as an
// installation admin, a project-bound viewer, the agent (for the agent's routes) or nobody.
// Every answer must be below 500, have a status the operation declares, a content type
// declared for that status, and a body that validates
// (ajv, 2020-12) against the declared schema; problem+json always against Problem.
//
// Bounds: FUZZ_RUNS runs per operation (each a valid and a mutated request) and
// FUZZ_BUDGET_MS for all operations on one driver, split evenly, whichever ends first.
// The seed is random per run and printed on failure; rerun one with FUZZ_SEED=<seed>.
import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DEFAULT_RATE_LIMITS } from "../../src/services/rate-limits/config.ts";
import type { WebhookTransport } from "../../src/services/webhooks/transport.ts";
import { ADMIN_TOKEN, createTestApi, deploymentBody, silentLogger, type TestApi } from "../support/api-harness.ts";
import { listOperations, loadOpenApiDocument, SchemaValidator, type Operation } from "../support/openapi-document.ts";
import { mutatedRequest, toHttp, validRequest, type Caller, type FuzzRequest, type KnownIds } from "../support/openapi-requests.ts";
import { arbitraryFromSchema } from "../support/schema-arbitrary.ts";

const SEED = process.env.FUZZ_SEED ? Number(process.env.FUZZ_SEED) : Math.floor(Math.random() * 2 ** 31);
const RUNS = Number(process.env.FUZZ_RUNS ?? 20);
const BUDGET_MS = Number(process.env.FUZZ_BUDGET_MS ?? 36_000);
const DRIVERS = ["pglite", "postgres"] as const;
/** The time bound never starves an operation below this many runs. */
const MIN_RUNS = 3;

const doc = loadOpenApiDocument();
const validator = new SchemaValidator(doc);
// Deletes last, so the resources the other operations aim at still exist when they run.
const operations = listOperations(doc).sort((a, b) => Number(a.method === "DELETE") - Number(b.method === "DELETE"));
const label = (op: Operation) => `${op.method} ${op.path}`;

/** Webhook deliveries never leave the machine: names resolve to a public address, every POST is refused. */
const offlineTransport: WebhookTransport = {
  resolve: async () => ["93.184.216.34"],
  send: async () => {
    throw new Error("connection refused (this test reaches no network)");
  },
};

/** Who sends: the agent's own routes mostly as the agent; routes without security mostly as nobody. */
function callersFor(op: Operation): fc.Arbitrary<Caller> {
  const weighted = (list: Array<[Caller, number]>) => fc.oneof(...list.map(([caller, weight]) => ({ arbitrary: fc.constant(caller), weight })));
  if (op.security?.length === 0) return weighted([["anonymous", 3], ["admin", 1]]);
  if (op.path.startsWith("/v1/agent/") || op.path.endsWith("/status")) return weighted([["agent", 4], ["admin", 1], ["viewer", 1]]);
  return weighted([["admin", 4], ["viewer", 2], ["anonymous", 1]]);
}

/**
 * How long one answer is read. Two operations never end on their own and are read for a bounded
 * time, then the request is aborted: an event stream (GET /v1/events/stream, GET /v1/deployments
 * with watch=true) and the agent's long poll (GET /v1/agent/desired, which waits up to
 * waitSeconds for a change and ends early when its request is aborted).
 */
const STREAM_READ_MS = 150;
const LONG_POLL_ABORT_MS = 50;
const ANSWER_TIMEOUT_MS = 15_000;

interface Answer {
  status: number;
  contentType: string;
  text: string;
  /** The stream was cut by the reader, not ended by the server. */
  cut: boolean;
}

async function readBounded(response: Response): Promise<{ text: string; cut: boolean }> {
  const reader = response.body?.getReader();
  if (!reader) return { text: "", cut: false };
  const decoder = new TextDecoder();
  let text = "";
  const deadline = Date.now() + STREAM_READ_MS;
  for (;;) {
    const left = deadline - Date.now();
    const chunk = await Promise.race([reader.read(), new Promise<"late">((resolve) => setTimeout(() => resolve("late"), Math.max(0, left)))]);
    if (chunk === "late") {
      await reader.cancel();
      return { text, cut: true };
    }
    if (chunk.done) return { text, cut: false };
    text += decoder.decode(chunk.value, { stream: true });
  }
}

/** What is wrong with an answer, by the operation's declaration; empty when nothing is. */
function judge(op: Operation, answer: Answer): string[] {
  const problems: string[] = [];
  if (answer.status >= 500) problems.push(`a ${answer.status} (no 5xx is acceptable): ${answer.text.slice(0, 600)}`);
  const declared = op.responses[String(answer.status)] ?? op.responses[`${String(answer.status)[0]}XX`] ?? op.responses.default;
  if (!declared) problems.push(`status ${answer.status} is not declared (declared: ${Object.keys(op.responses).join(", ")})`);
  const mediaType = answer.contentType.split(";")[0]!.trim().toLowerCase();
  let parsed: unknown;
  if (/json/.test(mediaType)) {
    try {
      parsed = JSON.parse(answer.text);
    } catch {
      problems.push(`a ${mediaType} body that is not JSON: ${answer.text.slice(0, 200)}`);
      return problems;
    }
  }
  if (mediaType === "application/problem+json") {
    const errors = validator.errors({ $ref: "#/components/schemas/Problem" }, parsed);
    if (errors) problems.push(`problem+json not a Problem: ${errors.join("; ")}`);
    else if ((parsed as { status: number }).status !== answer.status) problems.push(`problem status ${(parsed as { status: number }).status} on a ${answer.status}`);
  }
  if (!declared) return problems;
  const content = declared.content ?? {};
  if (Object.keys(content).length === 0) {
    if (answer.text.length > 0) problems.push(`a body on ${answer.status}, which declares none: ${answer.text.slice(0, 200)}`);
    return problems;
  }
  const media = content[mediaType];
  if (!media) {
    problems.push(`content type ${answer.contentType || "(none)"} is not declared for ${answer.status} (declared: ${Object.keys(content).join(", ")})`);
    return problems;
  }
  if (mediaType === "text/event-stream") {
    // An event stream is lines of `field: value` and blank lines (https://html.spec.whatwg.org/multipage/server-sent-events.html).
    const complete = answer.cut ? answer.text.slice(0, answer.text.lastIndexOf("\n") + 1) : answer.text;
    const bad = complete.split("\n").filter((line) => line !== "" && !/^(:|data:|event:|id:|retry:)/.test(line));
    if (bad.length > 0) problems.push(`event stream lines that are not SSE fields: ${bad.slice(0, 3).join(" | ")}`);
    return problems;
  }
  if (media.schema !== undefined) {
    const value = /json/.test(mediaType) ? parsed : answer.text;
    const errors = validator.errors(media.schema, value);
    if (errors) problems.push(`body does not match the ${answer.status} ${mediaType} schema: ${errors.slice(0, 8).join("; ")}; body ${answer.text.slice(0, 400)}`);
  }
  return problems;
}

describe("the OpenAPI document's own schemas drive the generator", () => {
  it("valid parameters and bodies generated for every operation validate against their schemas", () => {
    let checked = 0;
    for (const op of operations) {
      const schemas = [...op.parameters.map((p) => p.schema), ...Object.values(op.requestBody?.content ?? {}).map((m) => m.schema ?? true)];
      for (const schema of schemas) {
        fc.assert(
          fc.property(arbitraryFromSchema(doc, schema), (value) => {
            const errors = validator.errors(schema, value);
            if (errors) throw new Error(`${label(op)}: ${errors.join("; ")}`);
          }),
          { numRuns: 25, seed: SEED },
        );
        checked++;
      }
    }
    expect(checked).toBeGreaterThan(operations.length);
  });
});

describe.each(DRIVERS)("every operation of the OpenAPI document, fuzzed, on %s", (driver) => {
  let api: TestApi;
  let tokens: Record<Exclude<Caller, "anonymous">, string>;
  let knownIds: KnownIds;
  let admitted: Record<string, fc.Arbitrary<unknown>>;
  const runs = new Map<string, number>();
  const tally: Record<string, Record<number, number>> = {};
  const perOperationMs = Math.floor(BUDGET_MS / operations.length);

  beforeAll(async () => {
    // Quotas out of reach: the limiter has its own tests (rate-limits.test.ts), and here every
    // request should get as far as its handler rather than a 429 once a bucket runs dry.
    const quotas = { viewer: 1_000_000, editor: 1_000_000, admin: 1_000_000, agent: 1_000_000, address: 1_000_000 };
    api = await createTestApi(driver, { rateLimits: { ...DEFAULT_RATE_LIMITS, quotas } }, { webhookTransport: offlineTransport });
    const must = async (method: string, path: string, body: unknown, token?: string) => {
      const res = await api.call(method, path, { body, token });
      if (res.status >= 300) throw new Error(`set-up ${method} ${path}: ${res.status} ${JSON.stringify(res.body)}`);
      return res.body;
    };
    // The agent's cluster first: the deployment created after it is placed on it.
    const agent = await api.createAgent("fuzz-cluster");
    const project = await api.createProject("fuzz-team");
    const viewer = await api.createKey("viewer", api.defaultProjectId);
    // Installation-wide: a key of fuzz-team would be revoked with it when DELETE /v1/projects/{id} succeeds.
    const spareKey = (await must("POST", "/v1/api-keys", { name: "spare", role: "editor" })).id;
    const deployment = await must("POST", "/v1/deployments", deploymentBody("fuzz-target", { projectId: api.defaultProjectId, spec: { ...deploymentBody("x").spec, roles: [{ name: "main", replicas: 2 }] } }));
    const operation = await must("POST", "/v1/agent/operations", { kind: "retire", deploymentId: deployment.id, role: "main", replica: 1, step: "Withdrawing" }, agent.token);
    // Metrics written once, so that GET …/metrics has something to answer before the fuzzed writes run.
    await must("PUT", `/v1/agent/deployments/${deployment.id}/metrics`, { observedAt: api.clock.now().toISOString(), roles: [{ name: "main", signals: [], missing: [] }] }, agent.token);
    const webhook = await must("POST", "/v1/webhooks", { url: "https://hooks.example.com/berth", eventTypes: ["*"] });
    await must("POST", `/v1/webhooks/${webhook.id}/test`, undefined);
    const deliveries = await must("GET", `/v1/webhooks/${webhook.id}/deliveries`, undefined);
    const request = await must("POST", "/v1/deployment-requests", { projectId: api.defaultProjectId, name: "fuzz-plan", model: { name: "meta-llama/Llama-3.1-70B-Instruct" }, workload: { concurrency: 8 } });
    tokens = { admin: ADMIN_TOKEN, viewer, agent: agent.token };
    const bySegment: Record<string, string[]> = {
      projects: [project, api.defaultProjectId],
      "api-keys": [spareKey],
      deployments: [deployment.id, deployment.name],
      roles: ["main"],
      clusters: [agent.clusterId],
      operations: [operation.id],
      webhooks: [webhook.id],
      deliveries: deliveries.items.map((d: { id: string }) => d.id),
      "deployment-requests": [request.id],
    };
    const byField: Record<string, string[]> = {
      projectId: [api.defaultProjectId, project],
      deploymentId: [deployment.id],
      clusterId: [agent.clusterId],
      webhookId: [webhook.id],
    };
    // Bodies the server admits, by operation: the schema cannot say everything the server checks
    // (label keys, Kubernetes names, ids by prefix), so generated bodies alone rarely reach a 2xx.
    const unique = fc.nat({ max: 1_000_000 });
    const spec = deploymentBody("x").spec;
    admitted = {
      "POST /v1/deployments": unique.map((n) => deploymentBody(`fz-${n}`, { projectId: api.defaultProjectId, labels: { team: "fuzz" } })),
      "PUT /v1/deployments/{idOrName}": fc.integer({ min: 1, max: 3 }).map((replicas) => ({ spec: { ...spec, roles: [{ name: "main", replicas }] }, labels: {} })),
      "PATCH /v1/deployments/{idOrName}": fc.integer({ min: 1, max: 3 }).map((replicas) => ({ spec: { roles: [{ name: "main", replicas }] } })),
      "POST /v1/deployments/{idOrName}/rollback": fc.integer({ min: 1, max: 4 }).map((generation) => ({ generation })),
      "POST /v1/agent/operations": fc.integer({ min: 1, max: 2 }).map((replica) => ({ kind: "retire", deploymentId: deployment.id, role: "main", replica, step: "Withdrawing" })),
      "POST /v1/webhooks": fc.constantFrom("deployment.ready", "*").map((type) => ({ url: "https://hooks.example.com/berth", eventTypes: [type] })),
      "PATCH /v1/webhooks/{id}": fc.string({ maxLength: 40 }).map((description) => ({ description })),
      "POST /v1/deployment-requests": unique.map((n) => ({ projectId: api.defaultProjectId, name: `plan-${n}`, model: { name: "meta-llama/Llama-3.1-70B-Instruct" }, workload: { concurrency: 8 } })),
      "POST /v1/deployment-requests/{id}/apply": fc.constant({}),
    };
    knownIds = {
      path(op, name) {
        const segments = op.path.split("/");
        return bySegment[segments[segments.indexOf(`{${name}}`) - 1] ?? ""] ?? [];
      },
      field: (name) => byField[name] ?? [],
    };
  });

  afterAll(async () => {
    console.log(`openapi fuzz on ${driver}, seed ${SEED}: runs and answers by operation ${JSON.stringify({ runs: Object.fromEntries(runs), tally })}`);
    await api?.close();
  });

  async function send(op: Operation, request: FuzzRequest): Promise<Answer> {
    const { url, init } = toHttp(op, request, tokens);
    const abort = new AbortController();
    const longPoll = op.path === "/v1/agent/desired";
    const timer = setTimeout(() => abort.abort(), longPoll ? LONG_POLL_ABORT_MS : ANSWER_TIMEOUT_MS);
    try {
      const response = await api.app.request(url, { ...init, signal: abort.signal });
      const contentType = response.headers.get("content-type") ?? "";
      const { text, cut } = contentType.startsWith("text/event-stream") ? await readBounded(response) : { text: await response.text(), cut: false };
      return { status: response.status, contentType, text, cut };
    } finally {
      clearTimeout(timer);
    }
  }

  for (const op of operations) {
    it(`${label(op)}: valid and mutated requests get declared answers`, async () => {
      const valid = validRequest(doc, op, knownIds, callersFor(op), admitted[label(op)]);
      const errorsBefore = silentLogger.errors.length;
      const check = async (request: FuzzRequest) => {
        const answer = await send(op, request);
        const byStatus = (tally[label(op)] ??= {});
        byStatus[answer.status] = (byStatus[answer.status] ?? 0) + 1;
        const problems = judge(op, answer);
        if (problems.length > 0) throw new Error(`${label(op)} answered ${answer.status}: ${problems.join("\n")}`);
      };
      // The time bound is checked here rather than with fast-check's interruptAfterTimeLimit, which
      // races a run against its timer and leaves the losing request running, its failure unseen.
      // Every operation gets MIN_RUNS however slow the machine; once a run has failed, shrinking goes
      // on past the deadline (fast-check bounds it itself).
      const deadline = Date.now() + perOperationMs;
      let failed = false;
      const property = fc.asyncProperty(valid, mutatedRequest(valid, op), async (good, bad) => {
        if (!failed && (runs.get(label(op)) ?? 0) >= MIN_RUNS && Date.now() > deadline) return;
        runs.set(label(op), (runs.get(label(op)) ?? 0) + 1);
        try {
          await check(good);
          await check(bad);
        } catch (error) {
          failed = true;
          throw error;
        }
      });
      try {
        await fc.assert(property, { numRuns: RUNS, seed: SEED });
      } catch (error) {
        (error as Error).message = `FUZZ_SEED=${SEED}\n${(error as Error).message}`;
        throw error;
      }
      expect(silentLogger.errors.slice(errorsBefore)).toEqual([]);
      expect(runs.get(label(op)) ?? 0).toBeGreaterThanOrEqual(Math.min(RUNS, MIN_RUNS));
    }, perOperationMs + 60_000);
  }
});
