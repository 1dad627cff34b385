// Quick start: create a deployment, wait for its watch notice, scale it with If-Match,
// list, delete, and wait until it is gone. Run against a berth API:
//   BERTH_URL=http://127.0.0.1:8787 BERTH_TOKEN=bp_… npx tsx clients/typescript/examples/quickstart.ts [name]
// With an installation-wide key, BERTH_PROJECT names the project (default: the "default" project).
import { createBerthClient, etagOf, unwrap } from "../src/index.ts";

const client = createBerthClient({
  baseUrl: process.env.BERTH_URL ?? "http://127.0.0.1:8787",
  token: process.env.BERTH_TOKEN,
});
const name = process.argv[2] ?? `quickstart-${Date.now().toString(36)}`;

// 1. The project: named by BERTH_PROJECT, else the "default" one (a project-bound key sees only its own).
let projectId = process.env.BERTH_PROJECT;
if (!projectId) {
  for await (const project of client.paginate("/v1/projects")) {
    if (project.name === "default") projectId = project.id;
  }
}

// 2. Create: the client adds an Idempotency-Key, so a retried POST cannot create it twice.
const created = await unwrap(
  client.POST("/v1/deployments", {
    body: {
      name,
      projectId,
      spec: {
        model: { name: "Qwen/Qwen3-8B" },
        engine: { name: "vllm", image: "vllm/vllm-openai:v0.11.0" },
        roles: [{ name: "main", replicas: 1, resources: { gpus: 1 } }],
      },
    },
  }),
);
console.log(`created ${created.name} (${created.id}) at resourceVersion ${created.resourceVersion}`);

// 3. Watch from just before the create, until its notice arrives (at most 15 s).
for await (const notice of client.watchDeployments({
  resourceVersion: created.resourceVersion - 1,
  projectId: created.projectId,
  signal: AbortSignal.timeout(15_000),
})) {
  if (notice.object.id === created.id) {
    console.log(`watch: ${notice.type} ${notice.object.name} at resourceVersion ${notice.resourceVersion}`);
    break;
  }
}

// 4. Scale with If-Match: a merge patch replaces arrays, so send the roles with one field changed.
// The agent's status writes move the ETag too, so a 412 means: read again and retry (3 tries).
async function scaleMain(replicas: number) {
  for (let attempt = 1; ; attempt++) {
    const { data: current, response } = await client.GET("/v1/deployments/{idOrName}", { params: { path: { idOrName: created.id } } });
    if (!current) throw new Error(`GET ${created.id}: ${response.status}`);
    const patched = await client.PATCH("/v1/deployments/{idOrName}", {
      params: { path: { idOrName: created.id }, header: { "if-match": etagOf(response) } },
      headers: { "Content-Type": "application/merge-patch+json" },
      body: { spec: { roles: current.spec.roles.map((role) => (role.name === "main" ? { ...role, replicas } : role)) } },
    });
    if (patched.response.status !== 412 || attempt === 3) return unwrap(Promise.resolve(patched));
  }
}
const scaled = await scaleMain(2);
console.log(`scaled ${scaled.name}: main replicas ${scaled.spec.roles[0]!.replicas}, generation ${scaled.generation}`);

// 5. List every deployment of the project, page by page.
const names: string[] = [];
for await (const deployment of client.paginate("/v1/deployments", { params: { query: { projectId: created.projectId, limit: 20 } } })) {
  names.push(deployment.name);
}
console.log(`listed ${names.length} deployment(s): ${names.join(", ")}`);

// 6. Delete: 204 when no agent had taken it, 202 while an agent removes its objects.
const deleted = await client.DELETE("/v1/deployments/{idOrName}", { params: { path: { idOrName: created.id } } });
if (!deleted.response.ok) throw new Error(`DELETE ${created.id}: ${deleted.response.status}`);
console.log(`deleted ${created.name} (${deleted.response.status})`);

// 7. After a 202, follow the watch until the record is gone (at most 60 s).
if (deleted.response.status === 202) {
  for await (const notice of client.watchDeployments({
    resourceVersion: scaled.resourceVersion,
    projectId: created.projectId,
    signal: AbortSignal.timeout(60_000),
  })) {
    if (notice.type === "DELETED" && notice.object.id === created.id) {
      console.log(`gone: ${created.name}`);
      break;
    }
  }
}
