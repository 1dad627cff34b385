// Renders the committed openapi/openapi.json: the document of an app that never serves,
// so no database is opened (routes only need their schemas to be described).
import { systemClock } from "../domain/clock.ts";
import { DEFAULT_APP_CONFIG } from "../services/context.ts";
import { createApp } from "./app.ts";
import { consoleLogger } from "./env.ts";
import { buildOpenApiDocument } from "./openapi.ts";

export async function renderOpenApiJson(): Promise<string> {
  const app = createApp({
    db: undefined as never,
    clock: systemClock,
    config: DEFAULT_APP_CONFIG,
    logger: consoleLogger,
    checkDatabase: async () => {},
  });
  return JSON.stringify(buildOpenApiDocument(app), null, 2) + "\n";
}
