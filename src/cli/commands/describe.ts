// berth describe NAME|ID: the spec in short, status, conditions and the most recent events.
import { unwrap, type Deployment, type Event } from "../../../clients/typescript/src/index.ts";
import { deploymentAddress, dropResourceWord } from "../user/deployment-address.ts";
import { age, renderTable } from "../user/format.ts";
import { COMMON_HELP, openSession, parseCommand, usageError } from "../user/session.ts";

const USAGE = `usage: berth describe [deployment] NAME|ID [--events N] [--project ID] [-o table|json|yaml]

Shows the spec in short, the status with its conditions, and the last N events
(default 10). -o json|yaml prints the deployment as the API returns it.

${COMMON_HELP}`;

export async function run(args: string[]): Promise<void> {
  const { values, positionals } = parseCommand(args, { events: { type: "string" } }, USAGE);
  const rest = dropResourceWord(positionals);
  if (rest.length !== 1) throw usageError("describe needs one deployment name or id", USAGE);
  if (values.events !== undefined && !/^\d+$/.test(values.events)) throw usageError("--events must be a number", USAGE);
  const session = openSession(values);
  const { client } = session;
  const deployment = await unwrap(client.GET("/v1/deployments/{idOrName}", { params: deploymentAddress(session, rest[0]!) }));
  if (session.output !== "table") return session.printBody(deployment);
  const keep = Number(values.events ?? 10);
  const recent: Event[] = [];
  for await (const event of client.paginate("/v1/events", { params: { query: { deploymentId: deployment.id, limit: 500 } } })) {
    recent.push(event);
    if (recent.length > keep) recent.shift();
  }
  process.stdout.write(describeDeployment(deployment, recent));
}

export function describeDeployment(d: Deployment, events: Event[]): string {
  const { spec, status } = d;
  const out: string[] = [];
  const field = (label: string, value: string) => out.push(`${(label + ":").padEnd(18)}${value}`);
  const indent = (text: string) => text.trimEnd().split("\n").map((line) => `  ${line}`).join("\n");

  field("Name", d.name);
  field("ID", d.id);
  field("Project", d.projectId);
  const labels = Object.entries(d.labels).map(([k, v]) => `${k}=${v}`);
  field("Labels", labels.length > 0 ? labels.join(", ") : "<none>");
  field("Generation", `${d.generation} (observed ${status.observedGeneration ?? "-"})`);
  field("ResourceVersion", String(d.resourceVersion));
  field("Created", `${d.createdAt} (${age(d.createdAt)} ago)`);
  field("Model", `${spec.model.name} (${modelSource(spec.model.source)})`);
  field("Engine", `${spec.engine.name} ${spec.engine.image}`);
  field("Router", spec.router ? `${spec.router.kind}, ${spec.router.policy}, ${spec.router.replicas} replica(s)` : "<none>");
  if (spec.kvTransfer) field("KV transfer", `${spec.kvTransfer.connector} over ${spec.kvTransfer.protocol}`);
  field("Cluster", spec.clusterId ?? "<any>");
  field("Scaling", spec.scaling ? `${spec.scaling.mode}, ${spec.scaling.algorithm.type}` : "off");
  out.push("Roles:");
  out.push(
    indent(
      renderTable(
        ["NAME", "KIND", "REPLICAS", "SIZE", "GPUS", "GPU TYPE", "TP", "PP", "DP", "ELASTIC"],
        spec.roles.map((role) => [
          role.name,
          role.kind,
          String(role.replicas),
          String(role.size),
          String(role.resources.gpus),
          role.resources.gpuType ?? "any",
          String(role.parallelism.tensor),
          String(role.parallelism.pipeline),
          String(role.parallelism.data),
          role.elastic ? `${role.elastic.width}/${role.elastic.maxWidth}` : "-",
        ]),
      ),
    ),
  );
  out.push("Status:");
  out.push(`  Phase:     ${status.phase}`);
  out.push(`  Endpoint:  ${status.endpoint ?? "-"}`);
  if (status.message) out.push(`  Message:   ${status.message}`);
  if (status.roles?.length) {
    const count = (n: number | undefined) => (n === undefined ? "-" : String(n));
    out.push(
      indent(
        renderTable(
          ["ROLE", "DESIRED", "READY", "UPDATED", "DRAINING"],
          status.roles.map((r) => [r.name, count(r.desired), count(r.ready), count(r.updated), count(r.draining)]),
        ),
      ),
    );
  }
  out.push("Conditions:");
  out.push(
    status.conditions?.length
      ? indent(
          renderTable(
            ["TYPE", "STATUS", "REASON", "AGE", "MESSAGE"],
            status.conditions.map((c) => [c.type, c.status, c.reason, age(c.lastTransitionTime), c.message]),
          ),
        )
      : "  <none>",
  );
  out.push("Events:");
  out.push(
    events.length
      ? indent(renderTable(["SEQ", "AGE", "TYPE", "DETAIL"], events.map((e) => [String(e.seq), age(e.occurredAt), e.type, eventDetail(e)])))
      : "  <none>",
  );
  return out.join("\n") + "\n";
}

function modelSource(source: Deployment["spec"]["model"]["source"]): string {
  if ("huggingFace" in source) return `huggingFace ${source.huggingFace.repository}@${source.huggingFace.revision}`;
  if ("pvc" in source) return `pvc ${source.pvc.claimName}${source.pvc.path ? `:${source.pvc.path}` : ""}`;
  return source.uri;
}

function eventDetail(event: Event): string {
  const data = event.data as {
    actor?: { kind?: string };
    specChanged?: boolean;
    labelsChanged?: boolean;
    deletionRequested?: boolean;
    previousPhase?: string;
    deployment?: { phase?: string; generation?: number };
    message?: string;
  };
  const parts: string[] = [];
  if (data.actor?.kind) parts.push(`by ${data.actor.kind}`);
  if (data.previousPhase) parts.push(`${data.previousPhase} -> ${data.deployment?.phase ?? "?"}`);
  if (data.specChanged) parts.push(`spec (generation ${data.deployment?.generation ?? "?"})`);
  if (data.labelsChanged) parts.push("labels");
  if (data.deletionRequested) parts.push("deletion requested");
  if (data.message) parts.push(data.message);
  return parts.join("; ");
}
