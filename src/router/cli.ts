// `berth router`: parse the flags once, start the router, log one JSON line with its URL,
// and on SIGTERM/SIGINT stop accepting, give in-flight requests the grace period, exit 0.
import { readFileSync } from "node:fs";
import pino from "pino";
import { parseRouterArgs, RouterConfigError, ROUTER_USAGE } from "./config.ts";
import { startRouter } from "./server.ts";

export async function runRouter(args: string[]): Promise<void> {
  if (args.includes("--help") || args.includes("-h")) {
    process.stdout.write(ROUTER_USAGE);
    return;
  }
  let config;
  try {
    config = parseRouterArgs(args, process.env, (path) => readFileSync(path, "utf8"));
  } catch (error) {
    if (!(error instanceof RouterConfigError)) throw error;
    process.stderr.write(`berth router: ${error.message}\n\n${ROUTER_USAGE}`);
    process.exit(2);
  }
  const logger = pino({ level: config.logLevel, base: { service: "berth-router" } });
  const router = await startRouter({ config, logger });
  logger.info(
    { url: router.url, policy: config.policy, engine: config.engine, startupMs: Math.round(performance.now()) },
    "berth router listening",
  );
  let stopping = false;
  const stop = (signal: string) => {
    if (stopping) return;
    stopping = true;
    logger.info({ signal, graceMs: config.shutdownGraceMs }, "berth router stopping");
    void router.close(config.shutdownGraceMs).then(() => process.exit(0));
  };
  process.once("SIGTERM", () => stop("SIGTERM"));
  process.once("SIGINT", () => stop("SIGINT"));
}
