// The `berth` command. Each subcommand parses configuration once and hands it to its
// entry; unknown commands print usage and exit 2.
import { writeFileSync } from "node:fs";
import { parseArgs } from "node:util";
import type { Config } from "../api/config.ts";

const USAGE = `usage: berth <command>

commands:
  serve                 run the API (PORT, HOST, DATABASE_URL, BERTH_DATA_DIR, BERTH_ADMIN_TOKEN)
  migrate               apply database migrations and exit
  openapi [--out FILE]  print (or write) the OpenAPI 3.1 document
  sim-engine [flags] -- <vllm or sglang command line>
                        run the engine simulator in place of vLLM or SGLang
  router [flags]        run the built-in request router
`;

/** Loaded on demand: `sim-engine` and `router` start many times at once and need none of it. */
async function loadConfig(): Promise<Config> {
  const { parseConfig } = await import("../api/config.ts");
  try {
    return parseConfig(process.env);
  } catch (error) {
    process.stderr.write(`berth: ${(error as Error).message}\n`);
    process.exit(2);
  }
}

async function main(argv: string[]): Promise<void> {
  const [command, ...rest] = argv;
  switch (command) {
    case "serve": {
      const { startServer } = await import("../api/serve-node.ts");
      const server = await startServer(await loadConfig());
      const stop = async () => {
        await server.close();
        process.exit(0);
      };
      process.once("SIGINT", stop);
      process.once("SIGTERM", stop);
      return;
    }
    case "migrate": {
      const { openDatabase } = await import("../api/serve-node.ts");
      const database = await openDatabase(await loadConfig());
      await database.migrate();
      await database.close();
      process.stdout.write(`berth: migrations applied (${database.driver})\n`);
      return;
    }
    case "openapi": {
      const { values } = parseArgs({ args: rest, options: { out: { type: "string" } } });
      const { renderOpenApiJson } = await import("../api/openapi-file.ts");
      const json = await renderOpenApiJson();
      if (values.out) writeFileSync(values.out, json);
      else process.stdout.write(json);
      return;
    }
    case "sim-engine": {
      const { runSimEngine } = await import("../sim/cli.ts");
      await runSimEngine(rest);
      return;
    }
    case "router": {
      const { runRouter } = await import("../router/cli.ts");
      await runRouter(rest);
      return;
    }
    default:
      process.stderr.write(USAGE);
      process.exit(command === undefined || command === "help" || command === "--help" ? 0 : 2);
  }
}

main(process.argv.slice(2)).catch((error: unknown) => {
  process.stderr.write(`berth: ${(error as Error).stack ?? String(error)}\n`);
  process.exit(1);
});
