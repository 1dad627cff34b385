// berth clusters create | get | list | join-token | revoke-credentials | delete: cluster
// registration (join tokens are shown once), revoking an agent, and removing a cluster.
import { unwrap, type components } from "../../../clients/typescript/src/index.ts";
import { age, renderTable } from "../user/format.ts";
import { fetchList, hintMore, LIST_HELP, LIST_OPTIONS } from "../user/listing.ts";
import { COMMON_HELP, openSession, parseCommand, usageError } from "../user/session.ts";

const USAGE = `usage: berth clusters create NAME
       berth clusters get ID
       berth clusters list [--limit N] [--cursor C | --all]
       berth clusters join-token ID
       berth clusters revoke-credentials ID
       berth clusters delete ID [--move-to CLUSTER_ID]

create and join-token print a one-time join token the cluster's agent registers with
(join-token replaces the previous one). revoke-credentials makes the agent's requests
fail at once; it must register again. delete refuses while deployments are placed on the
cluster, unless --move-to reassigns them to another cluster.

${LIST_HELP}
${COMMON_HELP}`;

type Cluster = components["schemas"]["Cluster"];

const COLUMNS = ["ID", "NAME", "PHASE", "HEARTBEAT", "AGENT", "NODES", "GPUS FREE/ALLOC", "AGE"];

function clusterRow(cluster: Cluster): string[] {
  const nodes = cluster.inventory?.nodes ?? [];
  const sum = (pick: (n: (typeof nodes)[number]) => number) => nodes.reduce((total, node) => total + pick(node), 0);
  return [
    cluster.id,
    cluster.name,
    cluster.status.phase,
    cluster.status.lastHeartbeatAt ? `${age(cluster.status.lastHeartbeatAt)} ago` : "-",
    cluster.status.agentVersion ?? "-",
    cluster.inventory ? String(nodes.length) : "-",
    cluster.inventory ? `${sum((n) => n.gpuFree)}/${sum((n) => n.gpuAllocatable)}` : "-",
    age(cluster.createdAt),
  ];
}

export async function run(args: string[]): Promise<void> {
  const { values, positionals } = parseCommand(args, { ...LIST_OPTIONS, "move-to": { type: "string" } }, USAGE);
  const [verb, ...rest] = positionals;
  switch (verb) {
    case "create": {
      if (rest.length !== 1) throw usageError("clusters create needs one name", USAGE);
      const s = openSession(values);
      const created = await unwrap(s.client.POST("/v1/clusters", { body: { name: rest[0]! } }));
      if (s.output !== "table") return s.printBody(created);
      process.stdout.write(renderTable(COLUMNS, [clusterRow(created.cluster)]));
      process.stdout.write(`join token: ${created.joinToken}\n`);
      process.stderr.write("the join token is shown only now and works once, for an hour\n");
      return;
    }
    case "get": {
      if (rest.length !== 1) throw usageError("clusters get needs one cluster id", USAGE);
      const s = openSession(values);
      const cluster = await unwrap(s.client.GET("/v1/clusters/{id}", { params: { path: { id: rest[0]! } } }));
      if (s.output !== "table") return s.printBody(cluster);
      process.stdout.write(renderTable(COLUMNS, [clusterRow(cluster)]));
      return;
    }
    case "join-token": {
      if (rest.length !== 1) throw usageError("clusters join-token needs one cluster id", USAGE);
      const s = openSession(values);
      const issued = await unwrap(s.client.POST("/v1/clusters/{id}/join-token", { params: { path: { id: rest[0]! } } }));
      if (s.output !== "table") return s.printBody(issued);
      process.stdout.write(`join token: ${issued.joinToken}\n`);
      process.stderr.write(`the join token is shown only now and works once, until ${issued.expiresAt}; the previous one no longer works\n`);
      return;
    }
    case "revoke-credentials": {
      if (rest.length !== 1) throw usageError("clusters revoke-credentials needs one cluster id", USAGE);
      const s = openSession(values);
      const revoked = await unwrap(s.client.POST("/v1/clusters/{id}/credentials/revoke", { params: { path: { id: rest[0]! } } }));
      if (s.output !== "table") return s.printBody(revoked);
      process.stdout.write(`cluster ${revoked.clusterId}: ${revoked.revoked} agent credential(s) revoked\n`);
      return;
    }
    case "delete": {
      if (rest.length !== 1) throw usageError("clusters delete needs one cluster id", USAGE);
      const s = openSession(values);
      const moveTo = values["move-to"];
      await unwrap(
        s.client.DELETE("/v1/clusters/{id}", { params: { path: { id: rest[0]! }, query: moveTo === undefined ? {} : { moveTo } } }),
      );
      process.stdout.write(`cluster ${rest[0]} deleted${moveTo === undefined ? "" : `; its deployments moved to ${moveTo}`}\n`);
      return;
    }
    case "list":
    case undefined: {
      const s = openSession(values);
      const page = await fetchList(s, "/v1/clusters", values, USAGE);
      if (s.output !== "table") return s.printBody(page);
      process.stdout.write(renderTable(COLUMNS, page.items.map(clusterRow)));
      return hintMore(page, "berth clusters list");
    }
    default:
      throw usageError(`unknown clusters command "${verb}"`, USAGE);
  }
}
