// login and where the CLI's URL and key come from, --project with an installation key,
// and the keys, clusters and webhooks commands, as real processes against `berth serve`.
import { mkdtempSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { createServer, type Server } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startBerthServer, type BerthServer } from "../support/berth-process.ts";
import { cliWorld, type CliWorld } from "./support.ts";

describe("berth login, keys, clusters and webhooks", () => {
  let server: BerthServer;
  let world: CliWorld;
  let projectId: string;
  let receiver: Server;
  let receiverUrl: string;
  const received: string[] = [];

  beforeAll(async () => {
    // Webhook endpoints on loopback are refused unless the installation allows them.
    server = await startBerthServer({ BERTH_WEBHOOK_ALLOW_PRIVATE: "true", BERTH_WEBHOOK_ALLOW_HTTP: "true" });
    world = cliWorld(server);
    const projects = await world.api("GET", "/v1/projects");
    projectId = projects.body.items.find((p: { name: string }) => p.name === "default").id;
    receiver = createServer((req, res) => {
      received.push(req.headers["webhook-id"] as string);
      res.writeHead(204).end();
    });
    await new Promise<void>((resolve) => receiver.listen(0, "127.0.0.1", resolve));
    const address = receiver.address();
    receiverUrl = `http://127.0.0.1:${typeof address === "object" && address ? address.port : 0}/hook`;
  }, 90_000);
  afterAll(async () => {
    await server?.stop();
    await new Promise<void>((resolve) => receiver?.close(() => resolve()));
  });

  it("login checks the key, saves it with mode 0600, and flags or env override it", async () => {
    const noLogin = { BERTH_URL: undefined, BERTH_TOKEN: undefined };
    const refused = await world.berth(["login", "--url", server.url, "--token", "bp_wrong"], { env: noLogin });
    expect(refused).toMatchObject({ code: 1, stdout: "" });
    expect(refused.stderr).toMatch(/^berth: Authentication required \(401\)\n/);
    expect(() => statSync(join(world.configHome, "berth", "config.json"))).toThrow();

    const login = await world.berth(["login", "--url", server.url + "/", "--token", server.adminToken], { env: noLogin });
    const file = join(world.configHome, "berth", "config.json");
    expect(login).toMatchObject({ code: 0, stdout: `logged in to ${server.url}; saved to ${file}\n` });
    expect(statSync(file).mode & 0o777).toBe(0o600);
    expect(statSync(join(world.configHome, "berth")).mode & 0o777).toBe(0o700);
    expect(JSON.parse(readFileSync(file, "utf8"))).toEqual({ url: server.url, token: server.adminToken });

    // The saved login is used when nothing else says otherwise …
    const saved = await world.berth(["list"], { env: noLogin });
    expect(saved.code).toBe(0);
    // … and a flag or the environment beats it.
    const flag = await world.berth(["list", "--token", "bp_wrong"], { env: noLogin });
    expect(flag.code).toBe(1);
    expect(flag.stderr).toMatch(/Authentication required \(401\)/);
    const env = await world.berth(["list"], { env: { BERTH_URL: undefined, BERTH_TOKEN: "bp_wrong" } });
    expect(env.code).toBe(1);

    // Without XDG_CONFIG_HOME the file is under ~/.config.
    const home = mkdtempSync(join(tmpdir(), "berth-home-"));
    const homeLogin = await world.berth(["login", "--url", server.url, "--token", server.adminToken], {
      env: { ...noLogin, XDG_CONFIG_HOME: undefined, HOME: home },
    });
    expect(homeLogin.code).toBe(0);
    expect(statSync(join(home, ".config", "berth", "config.json")).mode & 0o777).toBe(0o600);

    const nothing = await world.berth(["list"], { env: { ...noLogin, XDG_CONFIG_HOME: mkdtempSync(join(tmpdir(), "berth-empty-")) } });
    expect(nothing).toMatchObject({ code: 2, stderr: "berth: no API URL: run `berth login --url URL --token KEY`, or set BERTH_URL or --url\n" });
  });

  it("an installation key names the project with --project (or BERTH_PROJECT)", async () => {
    const file = join(world.workDir, "admin.yaml");
    writeFileSync(file, "name: admin-made\nspec:\n  model: { name: m }\n  engine: { name: vllm, image: vllm/vllm-openai:v0.11.0 }\n  roles: [{ name: main }]\n");
    const without = await world.berth(["apply", "-f", file]);
    expect(without.code).toBe(1);
    expect(without.stderr).toMatch(/^berth: The request is not valid \(400\)\n/);
    expect(without.stderr).toMatch(/^ {2}\/projectId: required with an installation-wide key/m);

    const created = await world.berth(["apply", "-f", file, "--project", projectId]);
    expect(created).toMatchObject({ code: 0, stdout: "deployment/admin-made created\n" });
    const unchanged = await world.berth(["apply", "-f", file], { env: { BERTH_PROJECT: projectId } });
    expect(unchanged).toMatchObject({ code: 0, stdout: "deployment/admin-made unchanged\n" });
    const got = await world.berth(["get", "admin-made", "--project", projectId, "-o", "json"]);
    expect(JSON.parse(got.stdout).projectId).toBe(projectId);
  });

  it("keys create shows the token once; list and revoke", async () => {
    const created = await world.berth(["keys", "create", "--name", "ci", "--role", "viewer", "--project", projectId, "-o", "json"]);
    expect(created.code).toBe(0);
    const key = JSON.parse(created.stdout);
    expect(key).toMatchObject({ name: "ci", role: "viewer", projectId, token: expect.stringMatching(/^bp_/) });

    const asViewer = await world.berth(["list", "-o", "json"], { token: key.token });
    expect(asViewer.code).toBe(0);

    const table = await world.berth(["keys", "list"]);
    expect(table.code).toBe(0);
    const row = table.stdout.split("\n").find((line) => line.startsWith(key.id))!;
    expect(row.split(/\s{2,}/)).toEqual([key.id, "ci", "viewer", projectId, key.prefix, "-", expect.stringMatching(/^\d+s$/)]);

    const revoked = await world.berth(["keys", "revoke", key.id]);
    expect(revoked).toMatchObject({ code: 0, stdout: `key ${key.id} revoked\n` });
    const listed = await world.berth(["keys", "list", "-o", "json"]);
    expect(JSON.parse(listed.stdout).items.find((k: { id: string }) => k.id === key.id).revokedAt).not.toBeNull();

    const badRole = await world.berth(["keys", "create", "--name", "x", "--role", "owner"]);
    expect(badRole.code).toBe(2);
  });

  it("clusters create prints the join token once; get shows the cluster", async () => {
    const created = await world.berth(["clusters", "create", "gpu-east"]);
    expect(created.code).toBe(0);
    const id = /^(clu_\w+)\s+gpu-east\s+Pending/m.exec(created.stdout)?.[1];
    expect(id).toBeDefined();
    expect(created.stdout).toMatch(/^join token: \S+$/m);
    expect(created.stderr).toMatch(/shown only now/);

    const got = await world.berth(["clusters", "get", id!, "-o", "json"]);
    const fromApi = await world.api("GET", `/v1/clusters/${id}`);
    expect(JSON.parse(got.stdout)).toEqual(fromApi.body);
    const table = await world.berth(["clusters", "get", id!]);
    expect(table.stdout.split("\n")[1]!.split(/\s{2,}/).slice(0, 3)).toEqual([id, "gpu-east", "Pending"]);
  });

  it("clusters join-token, agent rotate-credential, clusters revoke-credentials and delete (refused, then moved)", async () => {
    const from = (await world.api("POST", "/v1/clusters", { name: "cli-from" })).body.cluster.id as string;
    const to = (await world.api("POST", "/v1/clusters", { name: "cli-to" })).body.cluster.id as string;
    // Placed before the agent reports an inventory (admission then checks its free GPUs).
    const spec = { model: { name: "Qwen/Qwen3-8B" }, engine: { name: "vllm", image: "vllm/vllm-openai:v0.11.0" }, roles: [{ name: "main", resources: { gpus: 1 } }], clusterId: from };
    expect((await world.api("POST", "/v1/deployments", { name: "cli-placed", projectId, spec })).status).toBe(201);
    const issued = await world.berth(["clusters", "join-token", from]);
    expect(issued.code).toBe(0);
    const joinToken = /^join token: (\S+)$/m.exec(issued.stdout)?.[1];
    expect(issued.stderr).toMatch(/previous one no longer works/);
    const registered = await fetch(`${server.url}/v1/agent/register`, {
      method: "POST",
      headers: { "Content-Type": "application/json" },
      body: JSON.stringify({ joinToken }),
    });
    expect(registered.status).toBe(201);
    const agentToken = ((await registered.json()) as { token: string }).token;
    const rotated = await world.berth(["agent", "rotate-credential", "--api", server.url, "--token", agentToken]);
    expect(rotated.code).toBe(0);
    expect(rotated.stdout).toMatch(/^ba_\w+\n$/);
    expect(rotated.stderr).toMatch(/previous one stops working at \d{4}-/);
    const heartbeat = { agentVersion: "cli", inventory: { nodes: [] } };
    expect((await world.api("POST", "/v1/agent/heartbeat", heartbeat, rotated.stdout.trim())).status).toBe(200);
    const revoked = await world.berth(["clusters", "revoke-credentials", from]);
    expect(revoked).toMatchObject({ code: 0, stdout: `cluster ${from}: 2 agent credential(s) revoked\n` });
    expect((await world.api("POST", "/v1/agent/heartbeat", heartbeat, rotated.stdout.trim())).status).toBe(401);

    const refused = await world.berth(["clusters", "delete", from]);
    expect(refused.code).not.toBe(0);
    expect(refused.stderr).toMatch(/cli-placed/);
    const moved = await world.berth(["clusters", "delete", from, "--move-to", to]);
    expect(moved).toMatchObject({ code: 0, stdout: `cluster ${from} deleted; its deployments moved to ${to}\n` });
    expect((await world.api("GET", `/v1/clusters/${from}`)).status).toBe(404);
  });

  it("webhooks create (secret shown once), list, test and delete", async () => {
    const created = await world.berth(["webhooks", "create", receiverUrl, "--event", "deployment.created", "--event", "deployment.deleted", "-o", "json"]);
    expect(created.code).toBe(0);
    const webhook = JSON.parse(created.stdout);
    expect(webhook).toMatchObject({ url: receiverUrl, eventTypes: ["deployment.created", "deployment.deleted"], secret: expect.stringMatching(/^whsec_/) });

    const list = await world.berth(["webhooks", "list"]);
    expect(list.stdout.split("\n").find((line) => line.startsWith(webhook.id))!.split(/\s{2,}/).slice(0, 4)).toEqual([
      webhook.id,
      receiverUrl,
      "deployment.created,deployment.deleted",
      "yes",
    ]);

    const test = await world.berth(["webhooks", "test", webhook.id]);
    expect(test.code).toBe(0);
    expect(test.stdout).toMatch(/^test delivery dlv_\w+ \(event evt_\w+\): (pending|succeeded|failed)/);

    const deleted = await world.berth(["webhooks", "delete", webhook.id]);
    expect(deleted).toMatchObject({ code: 0, stdout: `webhook ${webhook.id} deleted\n` });
    const after = await world.berth(["webhooks", "list", "-o", "json"]);
    expect(JSON.parse(after.stdout).items).toEqual([]);

    const unknownType = await world.berth(["webhooks", "create", receiverUrl, "--event", "deployment.exploded"]);
    expect(unknownType.code).toBe(1);
    expect(unknownType.stderr).toMatch(/^ {2}\/eventTypes\/0: /m);
  });
});
