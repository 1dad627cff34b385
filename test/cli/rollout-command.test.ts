// `berth rollout status|history|undo` as real processes against a real `berth serve`, with an
// agent credential writing the status an agent would (so status --wait follows a real watch).
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startBerthServer, type BerthServer } from "../support/berth-process.ts";
import { cliWorld, type CliWorld } from "./support.ts";

describe("berth rollout", () => {
  let server: BerthServer;
  let world: CliWorld;
  let editor: string;
  let agentToken: string;
  let dep: { id: string; generation: number };

  beforeAll(async () => {
    server = await startBerthServer();
    world = cliWorld(server);
    const projects = await world.api("GET", "/v1/projects");
    const projectId = projects.body.items.find((p: { name: string }) => p.name === "default").id;
    editor = (await world.api("POST", "/v1/api-keys", { name: "cli", role: "editor", projectId })).body.token;
    const cluster = await world.api("POST", "/v1/clusters", { name: "rollout-cluster" });
    agentToken = (await world.api("POST", "/v1/agent/register", { joinToken: cluster.body.joinToken })).body.token;
    const spec = {
      model: { name: "Qwen/Qwen3-8B" },
      engine: { name: "vllm", image: "vllm/vllm-openai:v0.11.0" },
      roles: [{ name: "main", replicas: 2, resources: { gpus: 1 } }],
    };
    dep = (await world.api("POST", "/v1/deployments", { name: "chat", spec }, editor)).body;
    const patched = await world.api("PATCH", `/v1/deployments/${dep.id}`, { spec: { engine: { image: "vllm/vllm-openai:v0.11.1" } } }, editor);
    expect(patched.body.generation).toBe(2);
  }, 90_000);
  afterAll(async () => {
    await server?.stop();
  });

  const berth = (args: string[]) => world.berth(args, { token: editor });
  const reportStatus = (generation: number, updated: number, ready: number) =>
    world.api(
      "PUT",
      `/v1/deployments/${dep.id}/status`,
      { phase: "Ready", observedGeneration: generation, roles: [{ name: "main", kind: "server", desired: 2, updated, ready }] },
      agentToken,
    );

  it("history lists generations newest first with actor, time and what changed", async () => {
    const result = await berth(["rollout", "history", "chat"]);
    expect(result.code).toBe(0);
    const lines = result.stdout.trimEnd().split("\n");
    expect(lines[0]).toMatch(/^GENERATION\s+ACTOR\s+TIME\s+CHANGE$/);
    expect(lines[1]).toMatch(/^2\s+user key_\w+\s+\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ\s+\/engine\/image "vllm\/vllm-openai:v0\.11\.0" -> "vllm\/vllm-openai:v0\.11\.1"$/);
    expect(lines[2]).toMatch(/^1\s+user key_\w+\s+\S+\s+created$/);
    expect(lines).toHaveLength(3);
    const json = await berth(["rollout", "history", dep.id, "-o", "json"]);
    expect(JSON.parse(json.stdout).items.map((r: { generation: number }) => r.generation)).toEqual([2, 1]);
  });

  it("status exits 1 until the current generation is updated and ready, and --wait follows it to 0", async () => {
    const pending = await berth(["rollout", "status", "chat"]);
    expect(pending.code).toBe(1);
    expect(pending.stdout).toBe("deployment/chat: waiting for the agent to observe generation 2 (observed none)\n  main: ?/2 updated, ?/2 ready\n");
    expect(pending.stderr).toBe("berth: deployment/chat has not rolled out generation 2; add --wait to follow it\n");

    expect((await reportStatus(2, 1, 2)).status).toBe(200);
    const waiting = berth(["rollout", "status", "chat", "--wait", "--timeout", "120"]);
    // Give the command time to read the deployment and follow its watch before the rollout
    // finishes (finishing first gives the same answer, read at once).
    await new Promise((resolve) => setTimeout(resolve, 3_000));
    expect((await reportStatus(2, 2, 2)).status).toBe(200);
    expect(await waiting).toMatchObject({ code: 0, stdout: "deployment/chat: generation 2 rolled out\n  main: 2/2 updated, 2/2 ready\n", stderr: "" });
    const done = await berth(["rollout", "status", dep.id]);
    expect(done).toMatchObject({ code: 0, stderr: "" });
  }, 180_000);

  it("status --wait gives up after --timeout with where the rollout stands", async () => {
    await world.api("PATCH", `/v1/deployments/${dep.id}`, { spec: { roles: [{ name: "main", replicas: 3, resources: { gpus: 1 } }] } }, editor);
    const result = await berth(["rollout", "status", "chat", "--wait", "--timeout", "2s"]);
    expect(result.code).toBe(1);
    expect(result.stderr).toBe(
      "berth: deployment/chat not rolled out after 2s (waiting for the agent to observe generation 3 (observed 2)); raise --timeout or see berth describe chat\n",
    );
  }, 60_000);

  it("undo restores the previous generation, --to-generation a chosen one, and says when nothing changed", async () => {
    const undone = await berth(["rollout", "undo", "chat"]);
    expect(undone).toMatchObject({ code: 0, stdout: "deployment/chat rolled back to generation 2 (now generation 4)\n", stderr: "" });
    const after = await world.api("GET", `/v1/deployments/${dep.id}`);
    expect(after.body.spec.roles[0].replicas).toBe(2);
    const first = await berth(["rollout", "undo", "chat", "--to-generation", "1"]);
    expect(first.stdout).toBe("deployment/chat rolled back to generation 1 (now generation 5)\n");
    expect((await world.api("GET", `/v1/deployments/${dep.id}`)).body.spec.engine.image).toBe("vllm/vllm-openai:v0.11.0");
    const again = await berth(["rollout", "undo", "chat", "--to-generation", "1"]);
    expect(again.stdout).toBe("deployment/chat unchanged (generation 1 has the current spec)\n");
    const history = await berth(["rollout", "history", "chat"]);
    expect(history.stdout.split("\n")[1]).toMatch(/^5\s+user key_\w+\s+\S+\s+rollback to 1: \/engine\/image "vllm\/vllm-openai:v0\.11\.1" -> "vllm\/vllm-openai:v0\.11\.0"$/);
  });

  it("reports refusals and mistakes in one line each", async () => {
    const unknown = await berth(["rollout", "undo", "chat", "--to-generation", "99"]);
    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toMatch(/^berth: Not found \(404\)\n {2}Deployment "chat" has no retained generation 99 \(generations 1–5 are retained\); list them with GET \/v1\/deployments\/dep_\w+\/revisions\.\n$/);
    const noVerb = await berth(["rollout"]);
    expect(noVerb.code).toBe(2);
    expect(noVerb.stderr).toMatch(/^berth rollout: rollout needs status, history or undo\n\nusage: berth rollout/);
    const badGen = await berth(["rollout", "undo", "chat", "--to-generation", "two"]);
    expect(badGen.code).toBe(2);
    expect(badGen.stderr).toMatch(/^berth rollout: --to-generation must be a generation number \(got "two"\)/);
    const misplaced = await berth(["rollout", "history", "chat", "--wait"]);
    expect(misplaced.code).toBe(2);
    expect((await berth(["rollout", "status", "nope"])).stderr).toMatch(/^berth: Not found \(404\)/);
  });
});
