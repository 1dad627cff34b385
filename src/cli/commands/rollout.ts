// berth rollout status | history | undo: where a deployment's current generation stands, its
// revision history (GET …/revisions), and a rollback (POST …/rollback) to an earlier generation.
import { unwrap, etagOf, type Revision } from "../../../clients/typescript/src/index.ts";
import { deploymentAddress } from "../user/deployment-address.ts";
import { renderTable } from "../user/format.ts";
import { describeActor, describeChange, previousGeneration, rolloutProgress } from "../user/rollout.ts";
import { CliError, COMMON_HELP, openSession, parseCommand, usageError, type Session } from "../user/session.ts";
import { parseTimeout, watchDeployment } from "../user/wait.ts";

const USAGE = `usage: berth rollout status DEPLOYMENT [--wait [--timeout T]]
       berth rollout history DEPLOYMENT
       berth rollout undo DEPLOYMENT [--to-generation N]

status    generation against the one the agent observed, per role updated/desired and
          ready/desired, and the UpToDate condition's reason; exit 0 when the current
          generation is rolled out, 1 when not (with --wait: when --timeout runs out)
history   the retained revisions, newest first: generation, who wrote it, when, and what
          changed against the revision before it
undo      a new generation carrying an earlier generation's spec (default: the one before
          the current); replicas stay while the autoscaler is active, elastic widths always

  --wait              keep following the deployment until it has rolled out
  --timeout T         how long --wait waits: 90s, 5m or seconds (default 120s)
  --to-generation N   the generation undo restores

${COMMON_HELP}`;

const OPTIONS = { wait: { type: "boolean" }, timeout: { type: "string" }, "to-generation": { type: "string" } } as const;

export async function run(args: string[]): Promise<void> {
  const { values, positionals } = parseCommand(args, OPTIONS, USAGE);
  const [verb, target, ...extra] = positionals;
  if (verb === undefined) throw usageError("rollout needs status, history or undo", USAGE);
  if (!["status", "history", "undo"].includes(verb)) throw usageError(`unknown rollout command "${verb}"`, USAGE);
  if (!target || extra.length > 0) throw usageError(`rollout ${verb} needs one deployment name or id`, USAGE);
  if (verb !== "status" && (values.wait || values.timeout !== undefined)) throw usageError("--wait and --timeout go with rollout status", USAGE);
  if (values.timeout !== undefined && !values.wait) throw usageError("--timeout goes with --wait", USAGE);
  if (verb !== "undo" && values["to-generation"] !== undefined) throw usageError("--to-generation goes with rollout undo", USAGE);
  const toGeneration = values["to-generation"];
  if (toGeneration !== undefined && !/^[1-9]\d{0,9}$/.test(toGeneration)) {
    throw usageError(`--to-generation must be a generation number (got "${toGeneration}")`, USAGE);
  }
  const timeoutMs = parseTimeout(values.timeout);
  const session = openSession(values);
  if (verb === "status") return status(session, target, values.wait ? timeoutMs : undefined);
  if (verb === "history") return history(session, target);
  return undo(session, target, toGeneration === undefined ? undefined : Number(toGeneration));
}

async function status(session: Session, target: string, waitMs: number | undefined): Promise<void> {
  let deployment = await unwrap(session.client.GET("/v1/deployments/{idOrName}", { params: deploymentAddress(session, target) }));
  if (waitMs !== undefined) {
    deployment = (await watchDeployment(session, deployment, waitMs, {
      goal: "rolled out",
      done: (d) => rolloutProgress(d).done,
      failed: (d) => (rolloutProgress(d).failed ? `deployment/${d.name} ${rolloutProgress(d).summary}` : undefined),
      why: (d) => rolloutProgress(d).summary,
      deleted: "while waiting for its rollout",
    }))!;
  }
  const progress = rolloutProgress(deployment);
  if (session.output !== "table") session.printBody({ name: deployment.name, generation: deployment.generation, observedGeneration: deployment.status.observedGeneration ?? null, ...progress });
  else process.stdout.write([`deployment/${deployment.name}: ${progress.summary}`, ...progress.roles.map((line) => `  ${line}`)].join("\n") + "\n");
  if (!progress.done) throw new CliError(`deployment/${deployment.name} has not rolled out generation ${deployment.generation}${waitMs === undefined ? "; add --wait to follow it" : ""}`);
}

async function history(session: Session, target: string): Promise<void> {
  const address = deploymentAddress(session, target);
  const revisions: Revision[] = [];
  for await (const revision of session.client.revisions(address.path.idOrName, address.query)) revisions.push(revision);
  if (session.output !== "table") return session.printBody({ items: revisions, nextCursor: null });
  const rows = revisions.map((revision, i) => [
    String(revision.generation),
    describeActor(revision),
    revision.createdAt.replace(/\.\d+Z$/, "Z"),
    describeChange(revision, revisions[i + 1]),
  ]);
  process.stdout.write(renderTable(["GENERATION", "ACTOR", "TIME", "CHANGE"], rows));
}

/** How often `undo` reads again when only the status moved between its read and its write. */
const UNDO_ATTEMPTS = 5;

async function undo(session: Session, target: string, toGeneration: number | undefined): Promise<void> {
  const { client } = session;
  let generation = toGeneration;
  for (let attempt = 1; ; attempt++) {
    const read = await client.GET("/v1/deployments/{idOrName}", { params: deploymentAddress(session, target) });
    const current = await unwrap(read);
    if (generation === undefined) {
      const page = await unwrap(client.GET("/v1/deployments/{idOrName}/revisions", { params: { path: { idOrName: current.id }, query: { limit: 2 } } }));
      generation = previousGeneration(current.generation, page.items);
      if (generation === undefined) throw new CliError(`deployment/${current.name} has no retained generation before ${current.generation} to go back to`);
    }
    // If-Match: undo what was read, not whatever another writer made of it since. The ETag
    // also moves when the agent writes status; a 412 with the spec's generation unchanged is
    // only that, so read again and retry (a changed generation is another writer: fail).
    const answer = await client.POST("/v1/deployments/{idOrName}/rollback", {
      params: { path: { idOrName: current.id }, header: { "if-match": etagOf(read.response) } },
      body: { generation },
    });
    if (answer.response.status === 412 && attempt < UNDO_ATTEMPTS) {
      const now = await unwrap(client.GET("/v1/deployments/{idOrName}", { params: { path: { idOrName: current.id } } }));
      if (now.generation === current.generation) continue;
    }
    const after = await unwrap(answer);
    report(session, after, current.generation, generation);
    return;
  }
}

function report(session: Session, after: { name: string; generation: number }, readGeneration: number, generation: number): void {
  if (session.output !== "table") session.printBody(after);
  if (after.generation === readGeneration) session.say(`deployment/${after.name} unchanged (generation ${generation} has the current spec)`);
  else session.say(`deployment/${after.name} rolled back to generation ${generation} (now generation ${after.generation})`);
}
