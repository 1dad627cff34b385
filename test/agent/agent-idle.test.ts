// An agent on an empty database stays idle: it long-polls the desired state at resourceVersion
// 0 as at any other, so a few idle seconds cost a handful of requests (not hundreds), and the
// first deployment still reaches it through that same long-poll.
import { serve } from "@hono/node-server";
import * as k8s from "@kubernetes/client-node";
import type { Server } from "node:http";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { berthPrograms, type SimCluster, startSimCluster } from "../../k8s/sim/index.ts";
import { type Agent, createAgent } from "../../src/agent/agent.ts";
import { createApiClient } from "../../src/agent/api-client.ts";
import { createKube } from "../../src/agent/kube.ts";
import { systemClock } from "../../src/domain/clock.ts";
import { createTestApi, deploymentBody, type TestApi } from "../support/api-harness.ts";
import { quiet } from "./e2e-support.ts";

const IMAGE = "vllm/vllm-openai:v0.11.0";

describe("an agent against an API whose database holds no deployment", () => {
  let api: TestApi;
  let cluster: SimCluster;
  let agent: Agent;
  let server: Server;
  /** Every request the API received from the agent, as "METHOD /path". */
  const seen: string[] = [];
  const warnings: string[] = [];
  const onWarning = (warning: Error) => warnings.push(`${warning.name}: ${warning.message}`);

  beforeAll(async () => {
    process.on("warning", onWarning);
    [api, cluster] = await Promise.all([
      createTestApi("pglite"),
      startSimCluster({
        nodes: [{ name: "gpu-a", gpuType: "nvidia-h100-80gb", gpus: 8 }],
        programs: { ...berthPrograms({ routerImage: "ghcr.io/berth/berth:0.1.0" }), noProcessImages: [IMAGE] },
        timeScale: 0.1,
      }),
    ]);
    const { token } = await api.createAgent("idle");
    server = await new Promise<Server>((resolve) => {
      const fetchCounted = (request: Request) => {
        const url = new URL(request.url);
        seen.push(`${request.method} ${url.pathname}`);
        return api.app.fetch(request);
      };
      const s = serve({ fetch: fetchCounted, port: 0, hostname: "127.0.0.1" }, () => resolve(s as Server));
    });
    const address = server.address() as { port: number };
    const kc = new k8s.KubeConfig();
    kc.loadFromOptions(cluster.kubeConfigOptions);
    agent = createAgent({
      kube: createKube(kc),
      api: createApiClient({ baseUrl: `http://127.0.0.1:${address.port}`, token }),
      clock: systemClock,
      // The default long-poll wait (30 s) outlasts the idle window below.
      config: { settleMs: 200, heartbeatMs: 60_000, resyncMs: 500, backoffBaseMs: 100, backoffCapMs: 1_000 },
      logger: quiet,
    });
    agent.start();
  }, 60_000);

  afterAll(async () => {
    process.off("warning", onWarning);
    await agent?.stop();
    server?.closeAllConnections();
    await new Promise((resolve) => server?.close(resolve));
    await cluster?.stop({ now: true });
    await api?.close();
  }, 30_000);

  it("sends a handful of requests over three idle seconds, without abort-listener warnings", async () => {
    await new Promise((resolve) => setTimeout(resolve, 3_000));
    const desired = seen.filter((line) => line === "GET /v1/agent/desired");
    // The first desired-state call answers at once; the second long-polls for the rest of the window.
    expect(desired.length).toBeGreaterThanOrEqual(1);
    expect(seen.length, seen.join("\n")).toBeLessThanOrEqual(5);
    expect(warnings.filter((w) => w.startsWith("MaxListenersExceededWarning"))).toEqual([]);
  });

  it("still sees the first deployment through that long-poll", async () => {
    const created = await api.call("POST", "/v1/deployments", { body: deploymentBody("first", { projectId: api.defaultProjectId }) });
    expect(created.status).toBe(201);
    const statusWrite = `PUT /v1/deployments/${created.body.id}/status`;
    // Bounded: 200 turns of 100 ms; the long-poll notices a change within its 250 ms poll.
    for (let turn = 0; turn < 200 && !seen.includes(statusWrite); turn++) await new Promise((resolve) => setTimeout(resolve, 100));
    expect(seen).toContain(statusWrite);
  });
});
