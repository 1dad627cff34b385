// The endpoint check (src/agent/endpoint-check.ts): its rule as a table, and its question asked of
// real sockets (a server that answers, a port nobody listens on, a server that never answers).
import { createServer, type RequestListener, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { askEndpoint, ENDPOINT_FAILURE_THRESHOLD, type EndpointCheck, nextEndpointCheck } from "../../src/agent/endpoint-check.ts";

const A = "http://10.96.0.10:8000";
const B = "http://10.96.0.11:8000";
const ok = { answered: true, status: 200 } as const;
const refused = { answered: false, error: "ECONNREFUSED" } as const;
const checked = (endpoint: string, answered: boolean, misses: number): EndpointCheck => ({ endpoint, answered, misses, detail: answered ? "answered 200" : "ECONNREFUSED" });

describe("nextEndpointCheck", () => {
  it.each<[string, EndpointCheck | undefined, string, typeof ok | typeof refused, boolean, number]>([
    ["first answer", undefined, A, ok, true, 0],
    ["first refusal", undefined, A, refused, false, 1],
    ["refused again before any answer", checked(A, false, 1), A, refused, false, 2],
    ["one miss after answering: still answering", checked(A, true, 0), A, refused, ENDPOINT_FAILURE_THRESHOLD > 1, 1],
    ["misses up to the threshold after answering: not answering", checked(A, true, ENDPOINT_FAILURE_THRESHOLD - 1), A, refused, false, ENDPOINT_FAILURE_THRESHOLD],
    ["an answer clears the misses", checked(A, true, 1), A, ok, true, 0],
    ["a new endpoint starts from nothing", checked(A, true, 0), B, refused, false, 1],
  ])("%s", (_, previous, endpoint, reply, answered, misses) => {
    expect(nextEndpointCheck(previous, endpoint, reply)).toMatchObject({ endpoint, answered, misses });
  });

  it("keeps the reply in words", () => {
    expect(nextEndpointCheck(undefined, A, { answered: true, status: 404 }).detail).toBe("answered 404");
    expect(nextEndpointCheck(undefined, A, refused).detail).toBe("ECONNREFUSED");
  });
});

describe("askEndpoint", () => {
  const servers: Server[] = [];
  const listen = async (handler: RequestListener) => {
    const server = createServer(handler);
    servers.push(server);
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  };
  let answering: string;
  let silent: string;
  let closed: string;
  let paths: string[];
  beforeAll(async () => {
    paths = [];
    answering = await listen((req, res) => {
      paths.push(req.url ?? "");
      res.writeHead(401).end("no token");
    });
    silent = await listen(() => {});
    const gone = await listen(() => {});
    closed = gone;
    await new Promise((resolve) => servers.pop()!.close(resolve));
  });
  afterAll(async () => {
    for (const server of servers) {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    }
  });

  it("any HTTP status is an answer (the route is what is checked), at /v1/models", async () => {
    expect(await askEndpoint(answering)).toEqual({ answered: true, status: 401 });
    expect(paths).toEqual(["/v1/models"]);
  });
  it("a refused connection is not, and says so", async () => {
    expect(await askEndpoint(closed)).toEqual({ answered: false, error: "ECONNREFUSED" });
  });
  it("a server that never answers is not, within the timeout", async () => {
    expect(await askEndpoint(silent, 200)).toEqual({ answered: false, error: "no answer within 200 ms" });
  });
});
