// /docs works with no internet: the page loads its UI bundle from this server only, and
// without a bundle it still answers, saying where the bundle is missing.
import { describe, expect, it } from "vitest";
import { createApp } from "../../src/api/app.ts";
import type { DocsAssets } from "../../src/api/docs.ts";
import { nodeDocsAssets } from "../../src/api/serve-node.ts";
import { systemClock } from "../../src/domain/clock.ts";
import { DEFAULT_APP_CONFIG } from "../../src/services/context.ts";

const silent = { info() {}, warn() {}, error() {} };

function appWith(docsAssets: DocsAssets | undefined) {
  // The docs routes never touch the database.
  return createApp({ db: undefined as never, clock: systemClock, config: DEFAULT_APP_CONFIG, logger: silent, checkDatabase: async () => {}, docsAssets });
}

function scriptSources(html: string): string[] {
  return [...html.matchAll(/<script\b[^>]*\bsrc\s*=\s*["']([^"']+)["']/gi)].map((match) => match[1]!);
}

describe("/docs", () => {
  it("renders the reference with only same-origin scripts and no external resources", async () => {
    const res = await appWith(nodeDocsAssets).request("/docs");
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toMatch(/^text\/html/);
    const html = await res.text();
    const sources = scriptSources(html);
    expect(sources).toEqual(["/docs/scalar.js"]);
    // No module script importing from elsewhere, no stylesheet or font from a CDN.
    expect(html).not.toMatch(/(src|href)\s*=\s*["'](https?:)?\/\//i);
    expect(html).not.toMatch(/import[^;]*from\s*["']https?:/i);
    expect(html).toContain('"url": "/openapi.json"');
    expect(html).toContain('"withDefaultFonts": false');
  });

  it("serves the Scalar bundle from node_modules as JavaScript", async () => {
    const res = await appWith(nodeDocsAssets).request("/docs/scalar.js");
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toMatch(/^text\/javascript/);
    const body = await res.text();
    expect(body.length).toBeGreaterThan(100_000);
    expect(body).toContain("createApiReference");
  });

  it("reads the bundle once and retries after a failed read", async () => {
    let calls = 0;
    const app = appWith({
      scalarJs: async () => {
        calls += 1;
        if (calls === 1) throw new Error("disk hiccup");
        return "window.Scalar = {};";
      },
    });
    expect((await app.request("/docs/scalar.js")).status).toBe(500);
    expect(await (await app.request("/docs/scalar.js")).text()).toBe("window.Scalar = {};");
    expect(await (await app.request("/docs/scalar.js")).text()).toBe("window.Scalar = {};");
    expect(calls).toBe(2);
  });

  it("still answers without a bundle, naming the missing package", async () => {
    const app = appWith(undefined);
    const page = await app.request("/docs");
    expect(page.status).toBe(200);
    const html = await page.text();
    expect(html).toContain("@scalar/api-reference");
    expect(html).toContain('href="/openapi.json"');
    expect(scriptSources(html)).toEqual([]);
    const bundle = await app.request("/docs/scalar.js");
    expect(bundle.status).toBe(404);
    expect(bundle.headers.get("content-type")).toBe("application/problem+json");
  });
});
