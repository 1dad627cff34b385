// A webhook dispatcher as its own process, for the crash test: the same loop `berth serve`
// runs (src/api/webhook-dispatcher.ts), against DATABASE_URL (PostgreSQL), with private
// addresses allowed (the receiver is on loopback) and a short lease so deliveries a killed
// dispatcher held come due again quickly. Prints "ready" once it runs; SIGTERM stops it.
import { createDatabase } from "../../../db/client.ts";
import { consoleLogger } from "../../../src/api/env.ts";
import { startWebhookDispatcher } from "../../../src/api/webhook-dispatcher.ts";
import { nodeWebhookTransport } from "../../../src/api/webhook-transport-node.ts";
import { systemClock } from "../../../src/domain/clock.ts";
import { decodeSecretKey, loadKeyring } from "../../../src/domain/secret-envelope.ts";
import { DEFAULT_APP_CONFIG } from "../../../src/services/context.ts";

const database = await createDatabase({ driver: "postgres", url: process.env.DATABASE_URL!, poolSize: 8 });
const loop = startWebhookDispatcher({
  ctx: {
    db: database.db,
    clock: systemClock,
    config: {
      ...DEFAULT_APP_CONFIG,
      secretKeys: await loadKeyring(decodeSecretKey(process.env.BERTH_SECRET_KEY!)),
      webhooks: { ...DEFAULT_APP_CONFIG.webhooks, allowPrivateAddresses: true, allowHttp: true, leaseSeconds: Number(process.env.LEASE_SECONDS ?? 30) },
    },
    webhookTransport: nodeWebhookTransport,
  },
  logger: consoleLogger,
  listen: database.listen?.bind(database),
});
process.stdout.write("ready\n");
process.once("SIGTERM", async () => {
  await loop.stop();
  await database.close();
  process.exit(0);
});
