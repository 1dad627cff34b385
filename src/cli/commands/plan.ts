// berth plan -f FILE: creates a deployment request from the file (the API plans it at once) and
// prints its ranked candidates, how many shapes were refused, and the memory-fit baseline; on a
// Failed plan the reason and the closest shape. --apply deploys a candidate straight after.
import { readFileSync } from "node:fs";
import { parse as parseYaml } from "yaml";
import { unwrap, type components } from "../../../clients/typescript/src/index.ts";
import { renderTable } from "../user/format.ts";
import { COMMON_HELP, CliError, openSession, parseCommand, usageError } from "../user/session.ts";

const USAGE = `usage: berth plan -f FILE [--apply] [--candidate N] [--project ID] [-o table|json|yaml]

FILE (YAML or JSON; "-" reads standard input) holds one deployment request:
{ name, model: { name, architecture? }, engine?, workload?, sla?, hardware?, autoApply?, overrides? }.
The request is created (and planned) on the server; the table lists the candidates
best first. --apply then creates the deployment of the first candidate, or of --candidate N.

${COMMON_HELP}`;

type RequestBody = components["schemas"]["DeploymentRequestInput"];
type DeploymentRequest = components["schemas"]["DeploymentRequest"];

export const PLAN_COLUMNS = ["RANK", "GPUS", "ENGINE", "GPU", "SHAPE", "TTFT MS", "ITL MS", "TOK/S/GPU", "HEADROOM"];

export async function run(args: string[]): Promise<void> {
  const { values, positionals } = parseCommand(
    args,
    { filename: { type: "string", short: "f" }, apply: { type: "boolean" }, candidate: { type: "string" } },
    USAGE,
  );
  if (positionals.length > 0) throw usageError(`unexpected argument "${positionals[0]}"`, USAGE);
  if (!values.filename) throw usageError("plan needs -f FILE", USAGE);
  const candidate = values.candidate === undefined ? undefined : Number(values.candidate);
  if (candidate !== undefined && (!Number.isInteger(candidate) || candidate < 1)) throw usageError(`--candidate must be a rank (1, 2, …), got "${values.candidate}"`, USAGE);
  if (candidate !== undefined && !values.apply) throw usageError("--candidate needs --apply", USAGE);
  const body = readRequest(values.filename);
  const session = openSession(values);
  const projectId = (typeof body.projectId === "string" ? body.projectId : undefined) ?? session.project;
  let request: DeploymentRequest = await unwrap(
    session.client.POST("/v1/deployment-requests", { body: { ...body, ...(projectId === undefined ? {} : { projectId }) } as RequestBody }),
  );
  if (values.apply && request.status.phase !== "Failed" && !request.status.deploymentId) {
    request = await unwrap(
      session.client.POST("/v1/deployment-requests/{id}/apply", { params: { path: { id: request.id } }, body: candidate === undefined ? {} : { candidate } }),
    );
  }
  if (session.output !== "table") {
    session.printBody(request);
    return;
  }
  process.stdout.write(renderPlan(request));
  if (request.status.phase === "Failed") throw new CliError(`request/${request.name} failed: ${request.status.reason ?? "no candidate"}`);
}

export function renderPlan(request: DeploymentRequest): string {
  const { status } = request;
  const lines = [`request/${request.name} ${status.phase} (${request.id}): ${status.searched} shapes searched, ${status.rejected.length} refused`];
  if (status.candidates.length > 0) {
    lines.push(
      renderTable(
        PLAN_COLUMNS,
        status.candidates.map((c) => [
          String(c.rank),
          String(c.gpus),
          c.shape.engine,
          c.shape.gpuType,
          shapeOf(c.shape),
          String(c.predicted.ttftMs),
          String(c.predicted.itlMs),
          String(c.predicted.outputTokensPerSecondPerGpu),
          `${Math.round(c.headroom * 100)}%`,
        ]),
      ).trimEnd(),
    );
    if (status.moreCandidates > 0) lines.push(`… and ${status.moreCandidates} more feasible shapes`);
  }
  if (status.phase === "Failed") {
    lines.push(`reason: ${status.reason ?? "-"}`);
    if (status.closest) lines.push(`closest: ${shapeOf(status.closest.shape)} on ${status.closest.shape.gpuType} (${status.closest.shape.engine}): ${status.closest.shortfall}`);
  }
  const b = status.baseline;
  lines.push(`baseline (memory-fit fallback): ${b.shape.engine} TP ${b.shape.tensor} on ${b.shape.gpuType}, ${b.gpus} GPUs, ${b.meetsSla ? "meets the SLA" : "does not meet the SLA"}`);
  if (status.deploymentId) lines.push(`deployment ${status.deploymentId} created from candidate ${status.selected}`);
  return lines.join("\n") + "\n";
}

function shapeOf(shape: components["schemas"]["PlanShape"]): string {
  const times = (n: number | undefined) => (n === undefined ? "" : `${n}× `);
  if (shape.mode === "disaggregated") return `${times(shape.prefillReplicas)}prefill TP${shape.prefillTensor} + ${times(shape.replicas)}decode TP${shape.tensor}`;
  return `${times(shape.replicas)}TP${shape.tensor}${shape.pipeline > 1 ? ` PP${shape.pipeline}` : ""}`;
}

function readRequest(file: string): Record<string, unknown> {
  let text: string;
  try {
    text = readFileSync(file === "-" ? 0 : file, "utf8");
  } catch (error) {
    throw new CliError(`cannot read ${file}: ${(error as Error).message}`);
  }
  let value: unknown;
  try {
    value = parseYaml(text);
  } catch (error) {
    throw new CliError(`${file}: ${(error as Error).message}`);
  }
  if (typeof value !== "object" || value === null || Array.isArray(value)) throw new CliError(`${file}: expected an object { name, model, … }`);
  return value as Record<string, unknown>;
}
