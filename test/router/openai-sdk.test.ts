// The official openai SDK against a real router on loopback in front of the engine simulator
// (`berth sim-engine`, vLLM flavour): answers and streams pass through, and the router's own
// errors arrive as the SDK's typed errors with message, type, code, param and request id.
import OpenAI, { APIError, BadRequestError, NotFoundError } from "openai";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { closedAfterEach, startTestRouter, type TestRouter } from "./support/harness.ts";
import { spawnBerth, type BerthProcess } from "./support/processes.ts";

const MODEL = "Qwen/Qwen3-8B";

let engine: BerthProcess;
let router: TestRouter;
let client: OpenAI;

beforeAll(async () => {
  engine = await spawnBerth(
    ["sim-engine", "--zero-latency", "--", "vllm", "serve", MODEL, "--host", "127.0.0.1", "--port", "0"],
    { ready: /listening on/ },
  );
  router = await startTestRouter();
  const put = await router.put({ endpoints: [{ id: "sim", url: engine.url, role: "server", state: "eligible" }] });
  expect(put.status).toBe(200);
  // The SDK retries 429 and 5xx by default; each error here must be the router's first answer.
  client = new OpenAI({ baseURL: `${router.url}/v1`, apiKey: "unused", maxRetries: 0 });
}, 30_000);
afterAll(async () => {
  await router?.close();
  await engine?.stop();
});

/** The error a call rejects with (fails the test if it succeeds). */
async function errorOf(call: Promise<unknown>): Promise<APIError> {
  try {
    await call;
  } catch (error) {
    if (error instanceof APIError) return error;
    throw error;
  }
  throw new Error("the call succeeded; an error was expected");
}

describe("the openai SDK through the router", () => {
  it("gets a chat completion", async () => {
    const completion = await client.chat.completions.create({ model: MODEL, messages: [{ role: "user", content: "Say hi" }], max_tokens: 8 });
    expect(completion.object).toBe("chat.completion");
    expect(completion.choices[0]!.message.role).toBe("assistant");
    expect(completion.usage!.completion_tokens).toBeGreaterThan(0);
  });

  it("streams a chat completion", async () => {
    const stream = await client.chat.completions.create({
      model: MODEL,
      messages: [{ role: "user", content: "Count" }],
      max_tokens: 8,
      stream: true,
    });
    let chunks = 0;
    let text = "";
    for await (const chunk of stream) {
      chunks++;
      text += chunk.choices[0]?.delta.content ?? "";
    }
    expect(chunks).toBeGreaterThan(1);
    expect(text.length).toBeGreaterThan(0);
  });

  it("lists and retrieves models", async () => {
    const ids: string[] = [];
    for await (const model of client.models.list()) ids.push(model.id);
    expect(ids).toEqual([MODEL]);
    expect((await client.models.retrieve(MODEL)).id).toBe(MODEL);
  });

  it("an unknown model is a NotFoundError with the router's fields and request id", async () => {
    const error = await errorOf(client.chat.completions.create({ model: "nope", messages: [{ role: "user", content: "hi" }] }));
    expect(error).toBeInstanceOf(NotFoundError);
    expect(error.status).toBe(404);
    expect(error.type).toBe("model_not_found");
    expect(error.code).toBe("model_not_found");
    expect(error.param).toBe("model");
    expect(error.message).toBe(`404 The model "nope" is not served here; the models are "${MODEL}".`);
    expect(error.requestID).toMatch(/^req_[0-9a-f]{32}$/);
    expect(error.error).toEqual({
      message: `The model "nope" is not served here; the models are "${MODEL}".`,
      type: "model_not_found",
      param: "model",
      code: "model_not_found",
      request_id: error.requestID,
    });
  });

  it("retrieving an unknown model is a NotFoundError too", async () => {
    const error = await errorOf(client.models.retrieve("org/missing"));
    expect(error).toBeInstanceOf(NotFoundError);
    expect(error.code).toBe("model_not_found");
    expect(error.param).toBe("model");
  });

  it("keeps the client's X-Request-Id", async () => {
    const error = await errorOf(
      client.chat.completions.create({ model: "nope", messages: [{ role: "user", content: "hi" }] }, { headers: { "x-request-id": "trace-7" } }),
    );
    expect(error.requestID).toBe("trace-7");
    expect((error.error as { request_id: string }).request_id).toBe("trace-7");
  });

  it("a body that is not JSON is a BadRequestError", async () => {
    const error = await errorOf(
      client.post("/chat/completions", { body: '{"model": "m", "messages": [', headers: { "content-type": "application/json" } }),
    );
    expect(error).toBeInstanceOf(BadRequestError);
    expect(error.status).toBe(400);
    expect(error.type).toBe("malformed_body");
    expect(error.param).toBeNull();
  });

  it("missing messages is a BadRequestError naming the field", async () => {
    const error = await errorOf(client.chat.completions.create({ model: MODEL } as never));
    expect(error).toBeInstanceOf(BadRequestError);
    expect(error.type).toBe("invalid_request");
    expect(error.code).toBe("invalid_request");
    expect(error.param).toBe("messages");
    expect(error.message).toMatch(/`messages` is required/);
  });

  it("an engine's own error passes through untouched", async () => {
    // The simulator validates what the router does not (here a negative max_tokens).
    const error = await errorOf(client.chat.completions.create({ model: MODEL, messages: [{ role: "user", content: "hi" }], max_tokens: -1 }));
    expect(error).toBeInstanceOf(BadRequestError);
    expect(error.type).not.toBe("invalid_request");
    expect(error.headers?.get("x-berth-upstream")).toBe("sim");
  });
});

describe("the openai SDK when nothing can serve", () => {
  const { router: startRouter } = closedAfterEach();

  it("no endpoints is a 503 APIError with Retry-After", async () => {
    const empty = await startRouter();
    const sdk = new OpenAI({ baseURL: `${empty.url}/v1`, apiKey: "unused", maxRetries: 0 });
    const error = await errorOf(sdk.chat.completions.create({ model: MODEL, messages: [{ role: "user", content: "hi" }] }));
    expect(error.status).toBe(503);
    expect(error.type).toBe("unavailable");
    expect(error.code).toBe("unavailable");
    expect(error.param).toBeNull();
    expect(error.message).toBe("503 No endpoints are configured yet.");
    expect(error.headers?.get("retry-after")).toBe("5");
    expect(error.headers?.get("content-type")).toBe("application/json");
    expect(error.requestID).toMatch(/^req_/);
  });
});
