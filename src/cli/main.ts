// The `berth` command. Each subcommand parses its flags with the shared helper (args.ts) and
// configuration once, then hands both to its entry. `--help`/`-h` on any command prints its
// usage on stdout and does nothing else; unknown commands and flags print one line naming
// them, then the usage, on stderr (exit 2).
import { writeFileSync } from "node:fs";
import type { Config } from "../api/config.ts";
import { parseCommandArgs, parsePort, reportUsage } from "./args.ts";

const USAGE = `usage: berth <command>

commands:
  up [--reset] [--port N] [--verbose]
                        the API, a simulated GPU cluster and an agent in one command (npm start)
  serve [--port N]      run the API (PORT, HOST, DATABASE_URL, BERTH_DATA_DIR, BERTH_ADMIN_TOKEN, BERTH_SECRET_KEY)
  migrate               apply database migrations and exit
  openapi [--out FILE]  print (or write) the OpenAPI 3.1 document
  sim-engine [flags] -- <vllm or sglang command line>
                        run the engine simulator in place of vLLM or SGLang
  router [flags]        run the built-in request router
  agent --api URL --token ba_… [--kubeconfig FILE]
                        run the cluster agent (reconciles deployments into Kubernetes)
  agent install --print --api URL [--token ba_…]
                        print the agent's install manifests (pipe it to kubectl apply -f -)
  node --name NAME --address IP --pod-addresses FIRST-LAST [--gpu-type T] [--gpus N]
                        join a virtual GPU node to a cluster; run its pods as processes

user commands (BERTH_URL/BERTH_TOKEN or \`berth login\`; --help on each):
  login --url URL --token KEY     check a key and save it (~/.config/berth/config.json)
  apply -f FILE                   create or update deployments from YAML or JSON
  get NAME|ID                     show a deployment
  list                            list deployments
  describe NAME|ID                spec, status, conditions and recent events
  delete NAME|ID                  delete a deployment
  watch                           follow deployment changes, one line per notice
  scale NAME ROLE=N…              set role replicas (If-Match, one retry on 412)
  rollout status|history|undo NAME
                                  rollout progress, revision history, roll back
  keys list|create|revoke         API keys
  clusters create|get|list        clusters and their join tokens
  webhooks list|create|delete|test
                                  webhook endpoints
  plan -f FILE [--apply]          plan a deployment request and print the ranked candidates

berth help COMMAND (or berth COMMAND --help) prints a command's usage.
`;

const SERVE_USAGE = `usage: berth serve [--port N] [--host ADDRESS]

Runs the API. Configuration from the environment:
  PORT (default 8787; --port wins), HOST (default 127.0.0.1; --host wins), DATABASE_URL
  (postgres://…, a PGlite directory or memory://; default: PGlite in $BERTH_DATA_DIR/db),
  BERTH_DATA_DIR (default ./.berth), BERTH_ADMIN_TOKEN (your own admin bearer token, 16 or
  more characters), BERTH_SECRET_KEY (32 random bytes in base64, e.g. \`openssl rand -base64 32\`:
  encrypts stored secrets; required with PostgreSQL, generated into $BERTH_DATA_DIR/secret-key for
  PGlite) and BERTH_SECRET_KEYS_PREVIOUS (older keys, comma-separated, after a rotation),
  LOG_LEVEL (trace|debug|info|warn|error|silent, default info).`;

const MIGRATE_USAGE = `usage: berth migrate

Applies the database migrations (DATABASE_URL, else PGlite in $BERTH_DATA_DIR/db) and exits.`;

const OPENAPI_USAGE = `usage: berth openapi [--out FILE]

Prints the OpenAPI 3.1 document of the API, or writes it to FILE.`;

const PORT_OPTIONS = { port: { type: "string" }, host: { type: "string" } } as const;

/** A listen failure the user can fix (the port is taken, the address is not this machine's) as one line. */
function listenFailure(error: unknown, config: Config): string | undefined {
  const code = (error as { code?: string }).code;
  if (code === "EADDRINUSE") {
    return `port ${config.port} on ${config.host} is in use; stop what holds it or choose another with --port N (or PORT=N)`;
  }
  if (code === "EADDRNOTAVAIL") return `cannot listen on ${config.host}: not an address of this machine (set --host or HOST)`;
  if (code === "EACCES") return `no permission to listen on port ${config.port}; choose one above 1023 with --port N (or PORT=N)`;
  return undefined;
}


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
  rollout: () => import("./commands/rollout.ts"),
  keys: () => import("./commands/keys.ts"),
  clusters: () => import("./commands/clusters.ts"),
  webhooks: () => import("./commands/webhooks.ts"),
  plan: () => import("./commands/plan.ts"),
};

/** A server that failed to start: the error as logs carry it (§14.3), no query text or parameters. */
async function reportStartFailure(command: string, error: unknown): Promise<number> {
  const { errorForLog } = await import("../services/log-error.ts");
  process.stderr.write(`berth ${command}: ${JSON.stringify(errorForLog(error), null, 2)}\n`);
  return 1;
}

/** Loaded on demand: `sim-engine` and `router` start many times at once and need none of it. */
async function loadConfig(command: string, overrides: Partial<Config> = {}): Promise<Config> {
  const { parseConfig } = await import("../api/config.ts");
  try {
    return { ...parseConfig(process.env), ...overrides };
  } catch (error) {
    process.stderr.write(`berth ${command}: ${(error as Error).message}\n`);
    process.exit(2);
  }
}

const stdio = { stdout: (text: string) => void process.stdout.write(text), stderr: (text: string) => void process.stderr.write(text) };

/** Runs a built-in command; usage requests and mistakes end it as args.ts says. */
async function builtin(name: string, run: () => Promise<number | void>): Promise<number | void> {
  try {
    return await run();
  } catch (error) {
    const code = reportUsage(`berth ${name}`, error, stdio);
    if (code === undefined) throw error;
    return code;
  }
}

async function main(argv: string[]): Promise<number | void> {
  const [command, ...rest] = argv;
  if (command === undefined || command === "--help" || command === "-h" || (command === "help" && rest.length === 0)) {
    process.stdout.write(USAGE);
    return 0;
  }
  if (command === "help") return main([rest[0]!, "--help"]);
  switch (command) {
    case "serve":
      return builtin("serve", async () => {
        const { values } = parseCommandArgs(rest, { name: "berth serve", usage: SERVE_USAGE, options: PORT_OPTIONS });
        const port = parsePort(values.port, SERVE_USAGE);
        const config = await loadConfig("serve", { ...(port === undefined ? {} : { port }), ...(values.host ? { host: values.host } : {}) });
        const { startServer } = await import("../api/serve-node.ts");
        let server;
        try {
          server = await startServer(config);
        } catch (error) {
          const { StartRefused } = await import("../api/start.ts");
          if (error instanceof StartRefused) {
            process.stderr.write(`berth serve: ${error.message}\n`);
            return 2;
          }
          const line = listenFailure(error, config);
          if (!line) process.exit(await reportStartFailure("serve", error));
          process.stderr.write(`berth serve: ${line}\n`);
          return 1;
        }
        const stop = async () => {
          await server.close();
          process.exit(0);
        };
        process.once("SIGINT", stop);
        process.once("SIGTERM", stop);
      });
    case "up":
      return builtin("up", async () => {
        const { parseUpArgs, runUp } = await import("./up.ts");
        const options = parseUpArgs(rest);
        const config = await loadConfig("up", options.port === undefined ? {} : { port: options.port });
        try {
          await runUp(config, options, process.env);
        } catch (error) {
          const { StartRefused } = await import("../api/start.ts");
          if (error instanceof StartRefused) {
            process.stderr.write(`berth up: ${error.message}\n`);
            return 2;
          }
          const line = listenFailure(error, config);
          if (!line) process.exit(await reportStartFailure("up", error));
          process.stderr.write(`berth up: ${line}\n`);
          process.exit(1);
        }
      });
    case "migrate":
      return builtin("migrate", async () => {
        parseCommandArgs(rest, { name: "berth migrate", usage: MIGRATE_USAGE, options: {} });
        const { openDatabase } = await import("../api/serve-node.ts");
        const database = await openDatabase(await loadConfig("migrate"));
        await database.migrate();
        await database.close();
        process.stdout.write(`berth: migrations applied (${database.driver})\n`);
      });
    case "openapi":
      return builtin("openapi", async () => {
        const { values } = parseCommandArgs(rest, { name: "berth openapi", usage: OPENAPI_USAGE, options: { out: { type: "string" } } });
        const { renderOpenApiJson } = await import("../api/openapi-file.ts");
        const json = await renderOpenApiJson();
        if (values.out) writeFileSync(values.out, json);
        else process.stdout.write(json);
      });
    case "sim-engine": {
      // Its flags are vLLM's and SGLang's, read by the simulator's own argparse-like reader.
      const { runSimEngine } = await import("../sim/cli.ts");
      await runSimEngine(rest);
      return;
    }
    case "router": {
      // Flags and environment both configure it, in one parser of its own (router/config.ts).
      const { runRouter } = await import("../router/cli.ts");
      await runRouter(rest);
      return;
    }
    case "node":
      return builtin("node", async () => {
        const { run } = await import("./node.ts");
        return await run(rest);
      });
    case "agent":
      return builtin("agent", async () => {
        const { run } = await import("./agent.ts");
        return await run(rest);
      });
    default: {
      const load = USER_COMMANDS[command];
      if (load) {
        const [{ run }, { runCommand }] = await Promise.all([load(), import("./user/session.ts")]);
        return await runCommand(command, () => run(rest));
      }
      const what = command.startsWith("-") ? `unknown option ${command}` : `unknown command "${command}"`;
      process.stderr.write(`berth: ${what}\n\n${USAGE}`);
      return 2;
    }
  }
}

main(process.argv.slice(2)).then(
  (code) => {
    if (typeof code === "number") process.exitCode = code;
  },
  (error: unknown) => {
    process.stderr.write(`berth: ${(error as Error).stack ?? String(error)}\n`);
    process.exit(1);
  },
);
