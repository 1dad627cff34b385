// The API reference page at /docs (Scalar), served with no internet: the UI bundle is
// answered from /docs/scalar.js instead of a public CDN. Its bytes come from the runtime
// entry (read from node_modules there), because this core may not touch a file system.
import type { OpenAPIHono } from "@hono/zod-openapi";
import { Scalar } from "@scalar/hono-api-reference";
import type { AppEnv } from "./env.ts";

export const SCALAR_BUNDLE_PATH = "/docs/scalar.js";
/** Where the entry files find the bundle, relative to the project's node_modules. */
export const SCALAR_BUNDLE_MODULE_PATH = "@scalar/api-reference/dist/browser/standalone.js";

export interface DocsAssets {
  /** The Scalar standalone (UMD) bundle; called once, on the first request that needs it. */
  scalarJs(): Promise<Uint8Array | string>;
}

export function registerApiReference(app: OpenAPIHono<AppEnv>, assets: DocsAssets | undefined): void {
  if (!assets) {
    app.get("/docs", (c) => c.html(MISSING_BUNDLE_PAGE, 200));
    return;
  }
  let bundle: Promise<Uint8Array<ArrayBuffer> | string> | undefined;
  const loadBundle = () =>
    (bundle ??= assets.scalarJs().then(
      // Copied once into a plain ArrayBuffer-backed array (a Node Buffer may sit on a shared pool).
      (bytes) => (typeof bytes === "string" ? bytes : new Uint8Array(bytes)),
      (error: unknown) => {
        bundle = undefined; // not cached: the next request reads again
        throw error;
      },
    ));
  app.get(SCALAR_BUNDLE_PATH, async (c) =>
    c.body(await loadBundle(), 200, {
      "Content-Type": "text/javascript; charset=utf-8",
      "Cache-Control": "public, max-age=3600",
    }),
  );
  app.get(
    "/docs",
    Scalar({
      pageTitle: "berth API reference",
      url: "/openapi.json",
      cdn: SCALAR_BUNDLE_PATH,
      // Nothing may reach outside the installation: no web fonts, telemetry or AI agent.
      withDefaultFonts: false,
      telemetry: false,
      agent: { disabled: true },
      showDeveloperTools: "never",
    }),
  );
}

const MISSING_BUNDLE_PAGE = `<!doctype html>
<html>
  <head><meta charset="utf-8" /><title>berth API reference</title></head>
  <body style="font-family: sans-serif; max-width: 40rem; margin: 3rem auto">
    <h1>berth API reference</h1>
    <p>This server was started without the reference UI bundle, so the interactive page is not available.
    The entry file that starts the API passes it to <code>createApp({ docsAssets })</code>, read from
    <code>node_modules/${SCALAR_BUNDLE_MODULE_PATH}</code> (package <code>@scalar/api-reference</code>).</p>
    <p>The OpenAPI 3.1 document itself is at <a href="/openapi.json">/openapi.json</a>.</p>
  </body>
</html>
`;
