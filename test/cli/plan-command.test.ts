// `berth plan -f FILE` as a real process against a real `berth serve`: the ranked table, a
// Failed plan's reason and closest shape (exit 1), --apply creating the deployment, JSON output,
// and usage errors.
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startBerthServer, type BerthServer } from "../support/berth-process.ts";
import { cliWorld, type CliWorld } from "./support.ts";

const request = (name: string, sla = "{ ttftMs: 2000, itlMs: 30 }") => `# a deployment request, as berth plan reads it
name: ${name}
model: { name: meta-llama/Llama-3.1-70B-Instruct }
workload: { concurrency: 64 }
sla: ${sla}
hardware: { gpuType: nvidia-h100-80gb }
`;

describe("berth plan", () => {
  let server: BerthServer;
  let world: CliWorld;
  let editor: string;

  beforeAll(async () => {
    server = await startBerthServer();
    world = cliWorld(server);
    const projects = await world.api("GET", "/v1/projects");
    const projectId = projects.body.items.find((p: { name: string }) => p.name === "default").id;
    editor = (await world.api("POST", "/v1/api-keys", { name: "cli-plan", role: "editor", projectId })).body.token;
  }, 90_000);
  afterAll(async () => {
    await server?.stop();
  });

  const berth = (args: string[]) => world.berth(args, { token: editor });
  const file = (name: string, text: string) => {
    const path = join(world.workDir, `${name}.yaml`);
    writeFileSync(path, text);
    return path;
  };

  it("prints the ranked candidates, the refused count and the baseline", async () => {
    const result = await berth(["plan", "-f", file("chat", request("chat"))]);
    expect(result.code).toBe(0);
    const lines = result.stdout.split("\n");
    expect(lines[0]).toMatch(/^request\/chat Ready \(dreq_[0-9a-z]{20}\): \d+ shapes searched, \d+ refused$/);
    expect(lines[1]!.split(/\s{2,}/)).toEqual(["RANK", "GPUS", "ENGINE", "GPU", "SHAPE", "TTFT MS", "ITL MS", "TOK/S/GPU", "HEADROOM"]);
    expect(lines[2]).toMatch(/^1\s+8\s+vllm\s+nvidia-h100-80gb\s+1× TP8\s/);
    expect(result.stdout).toMatch(/\nbaseline \(memory-fit fallback\): vllm TP 4 on nvidia-h100-80gb, 12 GPUs, meets the SLA\n/);
    expect(result.stderr).toBe("");
  });

  it("a Failed plan prints the reason and the closest shape, and exits 1", async () => {
    const result = await berth(["plan", "-f", file("hopeless", request("hopeless", "{ ttftMs: 1, itlMs: 0.5 }"))]);
    expect(result.code).toBe(1);
    expect(result.stdout).toMatch(/^request\/hopeless Failed /);
    expect(result.stdout).toMatch(/\nclosest: .+ on nvidia-h100-80gb \((vllm|sglang)\): misses .+ even at concurrency 1: /);
    expect(result.stderr).toContain("request/hopeless failed: no shape meets the request");
  });

  it("--apply --candidate 2 creates that candidate's deployment; -o json prints the request", async () => {
    const result = await berth(["plan", "-f", file("served", request("served")), "--apply", "--candidate", "2", "-o", "json"]);
    expect(result.code).toBe(0);
    const body = JSON.parse(result.stdout);
    expect(body.status).toMatchObject({ phase: "Deployed", selected: 2 });
    const deployment = await world.api("GET", `/v1/deployments/${body.status.deploymentId}`, undefined, editor);
    expect(deployment.status).toBe(200);
    expect(deployment.body.labels).toEqual({ "berth.dev/deployment-request": body.id });
  });

  it.each([
    [["plan"], "plan needs -f FILE"],
    [["plan", "-f", "x.yaml", "--candidate", "2"], "--candidate needs --apply"],
    [["plan", "-f", "x.yaml", "--apply", "--candidate", "zero"], "--candidate must be a rank"],
  ])("usage errors: %j", async (args, message) => {
    const result = await berth(args);
    expect(result.code).toBe(2);
    expect(result.stderr).toContain(message);
  });
});
