// berth apply -f FILE: create each deployment in the file, or bring an existing one (by
// name) to exactly what the file says with a conditional PUT (If-Match; one retry after
// a fresh read on 412), and report created / unchanged / updated with the JSON pointers
// that changed in the stored (defaulted) spec and labels.
import { readFileSync } from "node:fs";
import { parseAllDocuments } from "yaml";
import { etagOf, unwrap, type Deployment, type components } from "../../../clients/typescript/src/index.ts";
import { DeploymentName } from "../../domain/deployment-spec.ts";
import { deploymentAddress } from "../user/deployment-address.ts";
import { show } from "../user/format.ts";
import { diffJson, type JsonChange } from "../user/json-diff.ts";
import { COMMON_HELP, CliError, openSession, parseCommand, usageError, type Session } from "../user/session.ts";

const USAGE = `usage: berth apply -f FILE [-f FILE…] [--project ID] [-o table|json|yaml]

FILE (YAML or JSON; "-" reads standard input) holds one deployment per document,
shaped like the create body: { name, projectId?, labels?, spec }. A deployment
that exists (by name) is replaced by what the file says (labels too); read-only
fields from \`berth get -o yaml\` (id, status, generation, …) are ignored.

${COMMON_HELP}`;

/** Fields of a read that are not part of the create body; dropped so `get -o yaml` output applies as is. */
const READ_ONLY = ["id", "generation", "resourceVersion", "createdAt", "updatedAt", "status"];

type CreateBody = components["schemas"]["DeploymentCreate"];

export interface ApplyResult {
  outcome: "created" | "unchanged" | "updated";
  deployment: Deployment;
  changes: JsonChange[];
  /** Admission's warnings about the spec (docs/design.md §5.3), printed like kubectl's on stderr. */
  warnings: string[];
}

export async function run(args: string[]): Promise<void> {
  const { values, positionals } = parseCommand(args, { filename: { type: "string", short: "f", multiple: true } }, USAGE);
  if (positionals.length > 0) throw usageError(`unexpected argument "${positionals[0]}"`, USAGE);
  if (!values.filename?.length) throw usageError("apply needs -f FILE", USAGE);
  const documents = values.filename.flatMap(readDocuments);
  const session = openSession(values);
  for (const { where, body } of documents) {
    const result = await applyDeployment(session, body, where);
    if (session.output !== "table") session.printBody(result.deployment);
    session.say(`deployment/${result.deployment.name} ${result.outcome}`);
    for (const change of result.changes) session.say(`  ${change.pointer}: ${show(change.before)} -> ${show(change.after)}`);
    for (const warning of result.warnings) process.stderr.write(`Warning: ${warning}\n`);
  }
}

function readDocuments(file: string): { where: string; body: Record<string, unknown> }[] {
  let text: string;
  try {
    text = readFileSync(file === "-" ? 0 : file, "utf8");
  } catch (error) {
    throw new CliError(`cannot read ${file}: ${(error as Error).message}`);
  }
  const documents = parseAllDocuments(text);
  const list = Array.isArray(documents) ? documents : [documents];
  return list.flatMap((document, index) => {
    const where = `${file === "-" ? "standard input" : file} (document ${index + 1})`;
    if (document.errors.length > 0) throw new CliError(`${where}: ${document.errors[0]!.message}`);
    const value = document.toJS() as unknown;
    if (value === null || value === undefined) return [];
    if (typeof value !== "object" || Array.isArray(value)) throw new CliError(`${where}: expected an object { name, spec, … }`);
    const body = Object.fromEntries(Object.entries(value).filter(([key]) => !READ_ONLY.includes(key)));
    if (typeof body.name !== "string") throw new CliError(`${where}: field "name" is required (a string)`);
    // Checked here, before the name becomes part of a URL: the API would only say that the path names no deployment.
    const named = DeploymentName.safeParse(body.name);
    if (!named.success) throw new CliError(`${where}: field "name": ${JSON.stringify(body.name)} ${named.error.issues[0]!.message}`);
    return [{ where, body }];
  });
}

export async function applyDeployment(session: Session, body: Record<string, unknown>, where: string): Promise<ApplyResult> {
  const { client } = session;
  const name = body.name as string;
  const projectId = (typeof body.projectId === "string" ? body.projectId : undefined) ?? session.project;
  const address = deploymentAddress(session, name, projectId);
  for (let attempt = 1; ; attempt++) {
    const found = await client.GET("/v1/deployments/{idOrName}", { params: address });
    if (found.response.status === 404) {
      const create = { ...body, ...(projectId === undefined ? {} : { projectId }) } as CreateBody;
      const { warnings = [], ...deployment } = await unwrap(client.POST("/v1/deployments", { body: create }));
      return { outcome: "created", deployment, changes: [], warnings };
    }
    const before = await unwrap(found);
    const replaced = await client.PUT("/v1/deployments/{idOrName}", {
      params: { path: { idOrName: before.id }, header: { "if-match": etagOf(found.response) } },
      body: {
        name,
        ...(typeof body.projectId === "string" ? { projectId: body.projectId } : {}),
        labels: (body.labels ?? {}) as Record<string, string>,
        spec: body.spec as CreateBody["spec"],
      },
    });
    // Someone (or the agent's status write) changed it since the read: read again, once.
    if (replaced.response.status === 412 && attempt === 1) continue;
    if (!replaced.response.ok && replaced.response.status === 404) throw new CliError(`${where}: ${name} disappeared while applying; run apply again`);
    const { warnings = [], ...after } = await unwrap(replaced);
    const changes = [...diffJson(before.labels, after.labels, "/labels"), ...diffJson(before.spec, after.spec, "/spec")];
    return { outcome: changes.length > 0 ? "updated" : "unchanged", deployment: after, changes, warnings };
  }
}
