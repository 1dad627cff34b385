// The `berth` command. Each subcommand parses configuration once and hands it to its
// entry; unknown commands print usage and exit 2.
import { writeFileSync } from "node:fs";
import { parseArgs } from "node:util";
import type { Config } from "../api/config.ts";

const USAGE = `usage: berth <command>

commands:
  up [--reset]          the API, a simulated GPU cluster and an agent in one command (npm start)
  serve                 run the API (PORT, HOST, DATABASE_URL, BERTH_DATA_DIR, BERTH_ADMIN_TOKEN)
  migrate               apply database migrations and exit
  openapi [--out FILE]  print (or write) the OpenAPI 3.1 document
  sim-engine [flags] -- <vllm or sglang command line>
                        run the engine simulator in place of vLLM or SGLang
  router [flags]        run the built-in request router
  agent --api URL --token ba_… [--kubeconfig FILE]
                        run the cluster agent (reconciles deployments into Kubernetes)
  agent install --print --api URL [--token ba_…]
                        print the agent's install manifests (pipe it to kubectl apply -f -)

user commands (BERTH_URL/BERTH_TOKEN or \`berth login\`; --help on each):
  login --url URL --token KEY     check a key and save it (~/.config/berth/config.json)
  apply -f FILE                   create or update deployments from YAML or JSON
  get NAME|ID                     show a deployment
  list                            list deployments
  describe NAME|ID                spec, status, conditions and recent events
  delete NAME|ID                  delete a deployment
  watch                           follow deployment changes, one line per notice
  scale NAME ROLE=N…              set role replicas (If-Match, one retry on 412)
  keys list|create|revoke         API keys
  clusters create|get|list        clusters and their join tokens
  webhooks list|create|delete|test
                                  webhook endpoints
  plan -f FILE [--apply]          plan a deployment request and print the ranked candidates
`;

/** User commands, each in its own module, loaded only when run (so serve, router and sim-engine start fast). */
const USER_COMMANDS: Record<string, () => Promise<{ run(args: string[]): Promise<void> }>> = {
  login: () => import("./commands/login.ts"),
  apply: () => import("./commands/apply.ts"),
  get: () => import("./commands/get.ts"),
  list: () => import("./commands/list.ts"),
  describe: () => import("./commands/describe.ts"),
  delete: () => import("./commands/delete.ts"),
  watch: () => import("./commands/watch.ts"),
  scale: () => import("./commands/scale.ts"),
  keys: () => import("./commands/keys.ts"),
  clusters: () => import("./commands/clusters.ts"),
  webhooks: () => import("./commands/webhooks.ts"),
  plan: () => import("./commands/plan.ts"),
};

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
    case "up": {
      const { parseUpArgs, runUp, UsageError, UP_USAGE } = await import("./up.ts");
      if (rest.includes("--help")) {
        process.stdout.write(`${UP_USAGE}\n`);
        return;
      }
      try {
        await runUp(await loadConfig(), parseUpArgs(rest));
      } catch (error) {
        if (!(error instanceof UsageError)) throw error;
        process.stderr.write(`berth up: ${error.message}\n${UP_USAGE}\n`);
        process.exit(2);
      }
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
    case "agent": {
      const { run } = await import("./agent.ts");
      await run(rest);
      process.exit(0);
    }
    default: {
      const load = command === undefined ? undefined : USER_COMMANDS[command];
      if (load) {
        const [{ run }, { runCommand }] = await Promise.all([load(), import("./user/session.ts")]);
        process.exitCode = await runCommand(() => run(rest));
        return;
      }
      process.stderr.write(USAGE);
      process.exit(command === undefined || command === "help" || command === "--help" ? 0 : 2);
    }
  }
}

main(process.argv.slice(2)).catch((error: unknown) => {
  process.stderr.write(`berth: ${(error as Error).stack ?? String(error)}\n`);
  process.exit(1);
});
