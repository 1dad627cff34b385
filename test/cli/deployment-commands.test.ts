// The deployment commands of the `berth` CLI as real processes against a real `berth
// serve`: apply (created → unchanged → updated with pointers), get, list, describe,
// scale (If-Match, one retry after a 412), watch, delete, and how errors are reported.
import { createServer, type Server } from "node:http";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parse as parseYaml } from "yaml";
import { startBerthServer, type BerthServer } from "../support/berth-process.ts";
import { cliWorld, spawnBerth, type CliWorld } from "./support.ts";

const manifest = (replicas: number, team: string) => `# a deployment, as berth apply reads it
name: chat
labels:
  team: ${team}
spec:
  model: { name: Qwen/Qwen3-8B }
  engine: { name: vllm, image: "vllm/vllm-openai:v0.11.0" }
  roles:
    - name: main
      replicas: ${replicas}
      resources: { gpus: 2 }
`;

describe("berth deployment commands", () => {
  let server: BerthServer;
  let world: CliWorld;
  let editor: string;
  let projectId: string;

  beforeAll(async () => {
    server = await startBerthServer();
    world = cliWorld(server);
    const projects = await world.api("GET", "/v1/projects");
    projectId = projects.body.items.find((p: { name: string }) => p.name === "default").id;
    const key = await world.api("POST", "/v1/api-keys", { name: "cli", role: "editor", projectId });
    editor = key.body.token;
  }, 90_000);
  afterAll(async () => {
    await server?.stop();
  });

  const berth = (args: string[], env?: Record<string, string | undefined>) => world.berth(args, { token: editor, env });

  it("apply creates, then reports unchanged, then names the changed pointers", async () => {
    const file = join(world.workDir, "chat.yaml");
    writeFileSync(file, manifest(1, "search"));
    const created = await berth(["apply", "-f", file]);
    expect(created).toMatchObject({ code: 0, stdout: "deployment/chat created\n", stderr: "" });

    const again = await berth(["apply", "-f", file]);
    expect(again).toMatchObject({ code: 0, stdout: "deployment/chat unchanged\n" });
    const before = await world.api("GET", "/v1/deployments/chat", undefined, editor);

    writeFileSync(file, manifest(2, "chat"));
    const updated = await berth(["apply", "-f", file]);
    expect(updated.code).toBe(0);
    expect(updated.stdout).toBe('deployment/chat updated\n  /labels/team: "search" -> "chat"\n  /spec/roles/0/replicas: 1 -> 2\n');
    const after = await world.api("GET", "/v1/deployments/chat", undefined, editor);
    expect(after.body.generation).toBe(before.body.generation + 1);
    expect(after.body.spec.roles[0].replicas).toBe(2);
    expect(after.body.labels).toEqual({ team: "chat" });
  });

  it("apply reads JSON and standard input, and -o json prints the API's body", async () => {
    const body = { name: "chat-json", spec: { model: { name: "Qwen/Qwen3-8B" }, engine: { name: "sglang", image: "lmsysorg/sglang:v0.5.0" }, roles: [{ name: "main" }] } };
    const file = join(world.workDir, "chat.json");
    writeFileSync(file, JSON.stringify(body));
    const created = await berth(["apply", "-f", file, "-o", "json"]);
    expect(created.code).toBe(0);
    expect(created.stderr).toBe("deployment/chat-json created\n");
    const fromApi = await world.api("GET", "/v1/deployments/chat-json", undefined, editor);
    expect(JSON.parse(created.stdout)).toEqual(fromApi.body);

    const piped = await world.berth(["apply", "-f", "-"], { token: editor, stdin: JSON.stringify(body) });
    expect(piped).toMatchObject({ code: 0, stdout: "deployment/chat-json unchanged\n" });
  });

  it("get -o json and -o yaml print exactly the API's body", async () => {
    const fromApi = await world.api("GET", "/v1/deployments/chat", undefined, editor);
    const json = await berth(["get", "chat", "-o", "json"]);
    expect(json.code).toBe(0);
    expect(json.stderr).toBe("");
    expect(JSON.parse(json.stdout)).toEqual(fromApi.body);
    const yaml = await berth(["get", "deployment", fromApi.body.id, "-o", "yaml"]);
    expect(parseYaml(yaml.stdout)).toEqual(fromApi.body);
  });

  it("list prints a table (and -o json the API's page)", async () => {
    const table = await berth(["list"]);
    expect(table.code).toBe(0);
    const [header, ...rows] = table.stdout.trimEnd().split("\n");
    expect(header!.split(/\s{2,}/)).toEqual(["NAME", "ID", "PROJECT", "PHASE", "READY", "GEN", "AGE"]);
    expect(rows.map((row) => row.split(/\s{2,}/).slice(0, 1)[0])).toEqual(expect.arrayContaining(["chat", "chat-json"]));
    const chatRow = rows.find((row) => row.startsWith("chat "))!.split(/\s{2,}/);
    expect(chatRow[2]).toBe(projectId);
    expect(chatRow[3]).toBe("Pending");
    expect(chatRow[4]).toBe("main ?/2");
    expect(chatRow[5]).toBe("2");

    const json = await berth(["list", "-o", "json", "--limit", "1"]);
    const fromApi = await world.api("GET", "/v1/deployments?limit=1", undefined, editor);
    expect(JSON.parse(json.stdout)).toEqual(fromApi.body);
    expect(fromApi.body.nextCursor).not.toBeNull();
    const all = await berth(["list", "--all", "--limit", "1", "-o", "json"]);
    expect(JSON.parse(all.stdout).items.map((d: { name: string }) => d.name)).toEqual(["chat", "chat-json"]);
  });

  it("describe shows the spec in short, the status, conditions and recent events", async () => {
    const result = await berth(["describe", "chat"]);
    expect(result.code).toBe(0);
    const out = result.stdout;
    expect(out).toMatch(/^Name:\s+chat$/m);
    expect(out).toMatch(/^Labels:\s+team=chat$/m);
    expect(out).toMatch(/^Generation:\s+2 \(observed -\)$/m);
    expect(out).toMatch(/^Model:\s+Qwen\/Qwen3-8B \(huggingFace Qwen\/Qwen3-8B@main\)$/m);
    expect(out).toMatch(/^\s+main\s+server\s+2\s+1\s+2\s+any\s+2\s+1\s+1\s+-$/m);
    expect(out).toMatch(/^\s+Phase:\s+Pending$/m);
    expect(out).toMatch(/^\s+Accepted\s+True\s+\w+/m);
    expect(out).toMatch(/deployment\.created\s+by user/);
    expect(out).toMatch(/deployment\.updated\s+by user; spec \(generation 2\); labels/);
  });

  it("scale patches the role's replicas with If-Match and retries once after a 412", async () => {
    // A proxy that, before passing on the first PATCH, changes the deployment itself: the
    // CLI's If-Match is then stale, the API answers 412, and the CLI must read and retry.
    const patches: { ifMatch: string | undefined; status: number }[] = [];
    const proxy: Server = createServer(async (req, res) => {
      const chunks: Buffer[] = [];
      for await (const chunk of req) chunks.push(chunk as Buffer);
      if (req.method === "PATCH" && patches.length === 0) {
        await world.api("PATCH", "/v1/deployments/chat", { labels: { touched: "meanwhile" } }, editor);
      }
      const headers = Object.fromEntries(Object.entries(req.headers).filter(([k]) => !["host", "connection", "content-length"].includes(k))) as Record<string, string>;
      const upstream = await fetch(server.url + req.url, { method: req.method, headers, body: chunks.length ? Buffer.concat(chunks) : undefined });
      if (req.method === "PATCH") patches.push({ ifMatch: req.headers["if-match"] as string | undefined, status: upstream.status });
      res.writeHead(upstream.status, Object.fromEntries([...upstream.headers].filter(([k]) => k !== "content-encoding" && k !== "transfer-encoding")));
      res.end(Buffer.from(await upstream.arrayBuffer()));
    });
    await new Promise<void>((resolve) => proxy.listen(0, "127.0.0.1", resolve));
    const address = proxy.address();
    const proxyUrl = `http://127.0.0.1:${typeof address === "object" && address ? address.port : 0}`;
    try {
      const result = await berth(["scale", "chat", "main=4"], { BERTH_URL: proxyUrl });
      expect(result.stderr).toBe("berth: chat changed since it was read; reading it again\n");
      expect(result).toMatchObject({ code: 0, stdout: "deployment/chat scaled: main 2 -> 4\n" });
    } finally {
      await new Promise<void>((resolve) => proxy.close(() => resolve()));
    }
    expect(patches.map((p) => p.status)).toEqual([412, 200]);
    expect(patches[0]!.ifMatch).toMatch(/^"\d+"$/);
    expect(Number(patches[1]!.ifMatch!.replace(/"/g, ""))).toBeGreaterThan(Number(patches[0]!.ifMatch!.replace(/"/g, "")));
    const after = await world.api("GET", "/v1/deployments/chat", undefined, editor);
    expect(after.body.spec.roles[0].replicas).toBe(4);
    expect(after.body.labels).toEqual({ team: "chat", touched: "meanwhile" });

    const unknownRole = await berth(["scale", "chat", "decode=2"]);
    expect(unknownRole).toMatchObject({ code: 1, stdout: "", stderr: 'berth: deployment chat has no role "decode" (its roles: main)\n' });
  });

  it("watch prints one line per notice until interrupted", async () => {
    const watch = spawnBerth(["watch"], { BERTH_URL: server.url, BERTH_TOKEN: editor, XDG_CONFIG_HOME: world.configHome });
    try {
      await watch.waitForLines(2); // the snapshot: chat and chat-json
      await world.api("POST", "/v1/deployments", { name: "watched", spec: { model: { name: "m" }, engine: { name: "vllm", image: "vllm/vllm-openai:v0.11.0" }, roles: [{ name: "main" }] } }, editor);
      await watch.waitForLines(3);
      await world.api("DELETE", "/v1/deployments/watched", undefined, editor);
      await watch.waitForLines(4);
    } finally {
      expect(await watch.stop()).toBe(0);
    }
    const lines = watch.lines();
    expect(lines.slice(0, 2).map((line) => line.split(/\s+/).slice(0, 2)).sort()).toEqual([
      ["ADDED", "chat"],
      ["ADDED", "chat-json"],
    ]);
    expect(lines[2]).toMatch(/^ADDED {4}watched dep_\w+ Pending gen=1 rv=\d+$/);
    expect(lines[3]).toMatch(/^DELETED {2}watched dep_\w+ rv=\d+$/);
  });

  it("delete removes a deployment; reading it afterwards fails with the problem and exit code 1", async () => {
    const deleted = await berth(["delete", "chat-json"]);
    expect(deleted).toMatchObject({ code: 0, stdout: "deployment/chat-json deleted\n" });
    const missing = await berth(["get", "chat-json"]);
    expect(missing).toMatchObject({ code: 1, stdout: "", stderr: 'berth: Not found (404)\n  No deployment "chat-json".\n' });
  });

  it("an error prints the problem's title and every pointer, with exit code 1", async () => {
    const file = join(world.workDir, "bad.yaml");
    writeFileSync(
      file,
      `name: bad
spec:
  model: { name: m }
  engine: { name: vllm, image: "vllm/vllm-openai:v0.11.0" }
  roles:
    - name: main
      resources: { gpus: 4 }
      parallelism: { tensor: 3 }
      extraArgs: ["--tensor-parallel-size", "3"]
`,
    );
    const result = await berth(["apply", "-f", file]);
    expect(result.code).toBe(1);
    expect(result.stdout).toBe("");
    const lines = result.stderr.trimEnd().split("\n");
    expect(lines[0]).toBe("berth: The deployment spec was not admitted (422)");
    expect(lines.slice(2).map((line) => line.trim().split(":")[0])).toEqual(["/spec/roles/0/extraArgs/0", "/spec/roles/0/parallelism/tensor"]);

    const parameter = await berth(["list", "--phase", "Sleeping"]);
    expect(parameter.code).toBe(1);
    expect(parameter.stderr).toMatch(/^berth: The request is not valid \(400\)\n/);
    expect(parameter.stderr).toMatch(/^ {2}parameter phase: /m);

    const usage = await berth(["scale", "chat"]);
    expect(usage.code).toBe(2);
    expect(usage.stderr).toMatch(/^berth scale: scale needs a deployment and at least one ROLE=REPLICAS\n\nusage: berth scale/);
  });
});
