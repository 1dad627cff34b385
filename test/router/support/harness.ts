// Starts an in-process router on a loopback socket with test flags, and small clients for
// its admin and OpenAI APIs. Process-level behaviour (start-up time, signals) is tested
// separately against `node bin/berth.js router`.
import pino from "pino";
import { afterEach } from "vitest";
import { startFakeEngine, type FakeEngine, type FakeEngineOptions } from "./fake-engine.ts";
import { parseRouterArgs } from "../../../src/router/config.ts";
import { startRouter, type RunningRouter } from "../../../src/router/server.ts";

export const ADMIN_TOKEN = "test-admin-token-0123456789";

export interface TestRouter extends RunningRouter {
  put(body: unknown): Promise<Response>;
  endpoints(): Promise<AdminView>;
  chat(body: Record<string, unknown>, headers?: Record<string, string>): Promise<Response>;
  metrics(): Promise<string>;
}

export interface AdminView {
  endpoints: { id: string; url: string; role: string; state: string; inFlight: number; models: string[] | null; rank?: number }[];
  models: string[];
  holdWhenEmpty: boolean;
  held: number;
}

export async function startTestRouter(flags: string[] = []): Promise<TestRouter> {
  const config = parseRouterArgs(["--port", "0", "--admin-token", ADMIN_TOKEN, ...flags], {});
  const router = await startRouter({ config, logger: pino({ level: "silent" }), defaultMetrics: false });
  const admin = { authorization: `Bearer ${ADMIN_TOKEN}`, "content-type": "application/json" };
  return {
    ...router,
    put: (body) => fetch(`${router.url}/admin/endpoints`, { method: "PUT", headers: admin, body: JSON.stringify(body) }),
    endpoints: async () => (await (await fetch(`${router.url}/admin/endpoints`, { headers: admin })).json()) as AdminView,
    chat: (body, headers = {}) =>
      fetch(`${router.url}/v1/chat/completions`, {
        method: "POST",
        headers: { "content-type": "application/json", ...headers },
        body: JSON.stringify(body),
      }),
    metrics: async () => (await fetch(`${router.url}/metrics`)).text(),
  };
}

export function chatBody(text: string, extra: Record<string, unknown> = {}): Record<string, unknown> {
  return { model: "m", messages: [{ role: "user", content: text }], ...extra };
}

/** Which endpoint answered, by the x-berth-upstream header (the body is drained). */
export async function upstreamOf(response: Response): Promise<string> {
  await response.arrayBuffer();
  return response.headers.get("x-berth-upstream") ?? `(none: ${response.status})`;
}

export function tally(ids: string[]): Record<string, number> {
  const counts: Record<string, number> = {};
  for (const id of ids) counts[id] = (counts[id] ?? 0) + 1;
  return counts;
}

/** Polls `check` every 20 ms until it is true or `ms` pass. */
export async function until(check: () => boolean | Promise<boolean>, ms = 5_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`condition not met within ${ms} ms`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

/**
 * Routers and fake engines started by a test file, each closed after its test.
 * Call at the top of a test file: `const { router, engine } = closedAfterEach();`
 */
export function closedAfterEach() {
  const cleanup: (() => Promise<void>)[] = [];
  afterEach(async () => {
    await Promise.all(cleanup.splice(0).map((close) => close()));
  });
  return {
    async router(flags: string[] = []): Promise<TestRouter> {
      const started = await startTestRouter(flags);
      cleanup.push(() => started.close());
      return started;
    },
    async engine(name: string, options: FakeEngineOptions = {}): Promise<FakeEngine> {
      const started = await startFakeEngine(name, options);
      cleanup.push(() => started.close());
      return started;
    },
  };
}
