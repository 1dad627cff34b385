// CORS: off unless BERTH_CORS_ORIGINS lists exact origins. A listed origin gets its preflight
// answered and its simple requests marked readable (never `*`, never credentials); any other
// origin, and every origin when none is listed, gets no CORS headers at all.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parseConfig } from "../../src/api/config.ts";
import { parseCorsOrigins } from "../../src/api/cors.ts";
import { createTestApi, type TestApi } from "../support/api-harness.ts";

const ALLOWED = "https://console.example.com";
const REFUSED = "https://evil.example.net";

function preflight(origin: string) {
  return {
    token: null,
    headers: { Origin: origin, "Access-Control-Request-Method": "POST", "Access-Control-Request-Headers": "authorization,content-type" },
  };
}

describe("CORS with BERTH_CORS_ORIGINS set", () => {
  let api: TestApi;
  beforeAll(async () => {
    api = await createTestApi("pglite", { corsOrigins: parseCorsOrigins(`${ALLOWED}, http://localhost:5173`) });
  });
  afterAll(async () => {
    await api?.close();
  });

  it("answers a listed origin's preflight without a key: 204 with its origin, methods and headers", async () => {
    const res = await api.call("OPTIONS", "/v1/deployments", preflight(ALLOWED));
    expect(res.status).toBe(204);
    expect(res.headers.get("access-control-allow-origin")).toBe(ALLOWED);
    expect(res.headers.get("access-control-allow-methods")).toContain("POST");
    expect(res.headers.get("access-control-allow-headers")?.toLowerCase()).toContain("authorization");
    expect(res.headers.get("access-control-allow-credentials")).toBeNull();
    expect(res.headers.get("access-control-max-age")).toBe("600");
  });

  it("marks a listed origin's request readable and exposes the rate-limit and ETag headers", async () => {
    const res = await api.call("GET", "/v1/projects", { headers: { Origin: ALLOWED } });
    expect(res.status).toBe(200);
    expect(res.headers.get("access-control-allow-origin")).toBe(ALLOWED);
    expect(res.headers.get("access-control-expose-headers")).toContain("RateLimit");
    expect(res.headers.get("vary")).toContain("Origin");
  });

  it("gives a refused origin no CORS headers: its preflight is an ordinary OPTIONS (401 without a key)", async () => {
    const pre = await api.call("OPTIONS", "/v1/deployments", preflight(REFUSED));
    expect(pre.status).toBe(401);
    expect(pre.headers.get("access-control-allow-origin")).toBeNull();
    expect(pre.headers.get("access-control-allow-methods")).toBeNull();
    const simple = await api.call("GET", "/v1/projects", { headers: { Origin: REFUSED } });
    expect(simple.status).toBe(200);
    expect(simple.headers.get("access-control-allow-origin")).toBeNull();
    expect(simple.headers.get("access-control-expose-headers")).toBeNull();
    expect(simple.headers.get("vary")).toContain("Origin");
  });

  it("marks answers without an Origin as varying by it, for caches", async () => {
    const res = await api.call("GET", "/v1/projects");
    expect(res.headers.get("vary")).toContain("Origin");
    expect(res.headers.get("access-control-allow-origin")).toBeNull();
  });

  it("does not match an origin by prefix", async () => {
    const res = await api.call("GET", "/v1/projects", { headers: { Origin: `${ALLOWED}.evil.example.net` } });
    expect(res.headers.get("access-control-allow-origin")).toBeNull();
  });
});

describe("CORS by default", () => {
  let api: TestApi;
  beforeAll(async () => {
    api = await createTestApi("pglite");
  });
  afterAll(async () => {
    await api?.close();
  });

  it("sends no CORS headers to any origin", async () => {
    const pre = await api.call("OPTIONS", "/v1/deployments", preflight(ALLOWED));
    expect(pre.headers.get("access-control-allow-origin")).toBeNull();
    const simple = await api.call("GET", "/v1/projects", { headers: { Origin: ALLOWED } });
    expect(simple.status).toBe(200);
    expect(simple.headers.get("access-control-allow-origin")).toBeNull();
  });
});

describe("BERTH_CORS_ORIGINS parsing", () => {
  it.each([
    ["https://a.example.com", ["https://a.example.com"]],
    [" https://a.example.com , http://localhost:5173 ", ["https://a.example.com", "http://localhost:5173"]],
    ["", []],
  ])("%j → %j", (text, origins) => {
    expect(parseCorsOrigins(text)).toEqual(origins);
  });

  it.each(["*", "null", "https://a.example.com/", "https://a.example.com/app", "https://*.example.com", "a.example.com", "ftp://a.example.com", "HTTPS://A.example.com"])(
    "refuses %j, naming the entry and the way out",
    (entry) => {
      expect(() => parseCorsOrigins(entry)).toThrow(/not an exact origin: write scheme:\/\/host\[:port\]/);
    },
  );

  it("stops start-up with the variable named", () => {
    expect(() => parseConfig({ BERTH_CORS_ORIGINS: "*" })).toThrow(/BERTH_CORS_ORIGINS/);
    expect(parseConfig({}).corsOrigins).toEqual([]);
    expect(parseConfig({ BERTH_CORS_ORIGINS: ALLOWED }).corsOrigins).toEqual([ALLOWED]);
  });
});
