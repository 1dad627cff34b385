// A small OpenAI-shaped upstream on loopback for router tests: serves /v1/models and the
// completion routes, records every request (path, headers, raw body), and can be told to
// be slow, fail, answer "currently scaling", stream in chosen chunks, or die mid-stream.
import http, { type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";

export interface RecordedRequest {
  path: string;
  method: string;
  headers: http.IncomingHttpHeaders;
  raw: string;
  body: Record<string, unknown>;
  receivedAt: number;
}

export type Behaviour = (request: RecordedRequest, res: ServerResponse, req: IncomingMessage) => void | Promise<void>;

export interface FakeEngineOptions {
  models?: string[];
  /** Delay before answering a completion request, ms. */
  delayMs?: number;
  /** Overrides the default answer for completion routes. */
  behaviour?: Behaviour;
  /** /v1/models answers this status instead (e.g. 503). */
  modelsStatus?: number;
}

export interface FakeEngine {
  url: string;
  port: number;
  name: string;
  requests: RecordedRequest[];
  /** Completion requests only. */
  completions(): RecordedRequest[];
  /** Currently open completion requests. */
  open: number;
  /** Completion requests whose connection closed before the answer finished. */
  cancelled: number;
  options: FakeEngineOptions;
  close(): Promise<void>;
}

export async function startFakeEngine(name: string, options: FakeEngineOptions = {}): Promise<FakeEngine> {
  const engine: FakeEngine = {
    url: "",
    port: 0,
    name,
    requests: [],
    completions: () => engine.requests.filter((r) => r.path.endsWith("completions")),
    open: 0,
    cancelled: 0,
    options,
    close: async () => {},
  };
  const server = http.createServer((req, res) => {
    serve(req, res).catch(() => res.destroy()); // e.g. the router cancelled while the body was arriving
  });
  const serve = async (req: IncomingMessage, res: ServerResponse) => {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const raw = Buffer.concat(chunks).toString("utf8");
    let body: Record<string, unknown> = {};
    try {
      body = raw ? (JSON.parse(raw) as Record<string, unknown>) : {};
    } catch {
      body = {};
    }
    const path = (req.url ?? "/").split("?")[0]!;
    const recorded: RecordedRequest = { path, method: req.method ?? "GET", headers: req.headers, raw, body, receivedAt: Date.now() };
    engine.requests.push(recorded);
    if (path === "/v1/models") {
      if (engine.options.modelsStatus !== undefined) {
        res.writeHead(engine.options.modelsStatus, { "content-type": "application/json" });
        res.end(JSON.stringify({ error: "not now" }));
        return;
      }
      const data = (engine.options.models ?? ["m"]).map((id) => ({ id, object: "model", owned_by: "fake", max_model_len: 4096 }));
      res.writeHead(200, { "content-type": "application/json" });
      res.end(JSON.stringify({ object: "list", data }));
      return;
    }
    if (!path.endsWith("completions")) {
      res.writeHead(404, { "content-type": "application/json" });
      res.end(JSON.stringify({ error: { message: "no such route", type: "NotFoundError", code: 404 } }));
      return;
    }
    engine.open++;
    let finished = false;
    res.once("finish", () => (finished = true));
    res.once("close", () => {
      engine.open--;
      if (!finished) engine.cancelled++;
    });
    if (engine.options.delayMs) await sleep(engine.options.delayMs);
    if (res.destroyed) return;
    await (engine.options.behaviour ?? defaultAnswer(name))(recorded, res, req);
  };
  server.keepAliveTimeout = 5_000;
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  engine.port = (server.address() as AddressInfo).port;
  engine.url = `http://127.0.0.1:${engine.port}`;
  engine.close = () =>
    new Promise<void>((resolve) => {
      server.close(() => resolve());
      server.closeAllConnections();
    });
  return engine;
}

/** A vLLM-like answer: SSE chunks when streaming, else JSON; a prefill leg returns kv_transfer_params. */
export function defaultAnswer(name: string): Behaviour {
  return async (request, res) => {
    const kv = request.body.kv_transfer_params as Record<string, unknown> | undefined;
    if (request.body.stream === true) {
      res.writeHead(200, { "content-type": "text/event-stream; charset=utf-8", "cache-control": "no-cache" });
      for (let i = 0; i < 3; i++) {
        res.write(`data: ${JSON.stringify({ id: "cmpl-1", choices: [{ index: 0, delta: { content: `${name}-${i} ` } }] })}\n\n`);
        await sleep(2);
      }
      res.end("data: [DONE]\n\n");
      return;
    }
    const answer: Record<string, unknown> = {
      id: "cmpl-1",
      object: "chat.completion",
      served_by: name,
      choices: [{ index: 0, message: { role: "assistant", content: `hello from ${name}` }, finish_reason: "stop" }],
    };
    if (kv?.do_remote_decode === true) {
      answer.kv_transfer_params = {
        do_remote_prefill: true,
        do_remote_decode: false,
        remote_engine_id: `engine-${name}`,
        remote_block_ids: [[1, 2, 3]],
        remote_host: "10.0.0.1",
        remote_port: 5600,
        remote_request_id: `req-${name}`,
      };
    }
    const text = JSON.stringify(answer);
    res.writeHead(200, { "content-type": "application/json", "content-length": Buffer.byteLength(text) });
    res.end(text);
  };
}

export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/** A loopback port with nothing listening (connections are refused). */
export async function closedPort(): Promise<number> {
  const server = http.createServer();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const port = (server.address() as AddressInfo).port;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}
