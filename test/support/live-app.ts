// Serves a test app (see api-harness.ts) on a real loopback socket, for clients that
// need one (the TypeScript client's pagination and watch tests).
import { serve } from "@hono/node-server";
import type { Server } from "node:http";
import type { TestApi } from "./api-harness.ts";

export interface LiveApp {
  url: string;
  close(): Promise<void>;
}

export async function serveTestApi(api: TestApi): Promise<LiveApp> {
  const server = await new Promise<Server>((resolve) => {
    const s = serve({ fetch: api.app.fetch, port: 0, hostname: "127.0.0.1" }, () => resolve(s as Server));
  });
  const address = server.address();
  const port = typeof address === "object" && address ? address.port : 0;
  return {
    url: `http://127.0.0.1:${port}`,
    close: () =>
      new Promise<void>((resolve) => {
        // Open event streams never end by themselves.
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
