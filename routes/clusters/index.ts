// /v1/clusters and the agent's registration: a cluster gets a one-time join token,
// which its agent exchanges for a credential at /v1/agent/register.
import { createRoute, type OpenAPIHono } from "@hono/zod-openapi";
import { z } from "zod";
import { serviceContext, systemContext, type AppEnv } from "../../src/api/env.ts";
import { AUTH_PROBLEMS, BODY_PROBLEMS, bearerSecurity, jsonBody, jsonContent, problems } from "../../src/api/route-kit.ts";
import { createCluster } from "../../src/services/clusters/create-cluster.ts";
import { getCluster } from "../../src/services/clusters/get-cluster.ts";
import { registerAgent } from "../../src/services/clusters/register-agent.ts";
import { listClusters } from "../../src/services/clusters/list-clusters.ts";
import { Cluster } from "../../src/domain/cluster.ts";
import { ListQuery, listOf } from "../../src/domain/resources.ts";
import { registerClusterLifecycleRoutes } from "./lifecycle.ts";
import { LIMITS } from "../../src/domain/limits.ts";

const ClusterName = z
  .string()
  .min(1)
  .max(63)
  .regex(/^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/, "must be a DNS-1123 label");

export function registerClusterRoutes(app: OpenAPIHono<AppEnv>) {
  app.openapi(
    createRoute({
      operationId: "createCluster",
      method: "post",
      path: "/v1/clusters",
      tags: ["Clusters"],
      summary: "Register a cluster (installation admin); returns a one-time join token valid for 1 h",
      description: "Registers a cluster and answers a join token, valid for one hour, that an agent exchanges for its credential at /v1/agent/register.",
      security: bearerSecurity,
      request: { body: jsonBody(z.strictObject({ name: ClusterName }).meta({ id: "ClusterCreate" }), "The cluster") },
      responses: {
        201: jsonContent(z.object({ cluster: Cluster, joinToken: z.string().max(LIMITS.token) }).meta({ id: "ClusterCreated" }), "Created"),
        ...problems(...BODY_PROBLEMS, 409),
      },
    }),
    async (c) => {
      const created = await createCluster({ ctx: serviceContext(c), input: c.req.valid("json") });
      return c.json(created, 201, { Location: `/v1/clusters/${created.cluster.id}` });
    },
  );
  app.openapi(
    createRoute({
      operationId: "listClusters",
      method: "get",
      path: "/v1/clusters",
      tags: ["Clusters"],
      summary: "List clusters with their connection state and inventory",
      description: "Pages through the clusters with their last heartbeat, agent version and GPU inventory.",
      security: bearerSecurity,
      request: { query: ListQuery },
      responses: { 200: jsonContent(listOf(Cluster, "ClusterList"), "A page of clusters"), ...problems(...AUTH_PROBLEMS) },
    }),
    async (c) => c.json(await listClusters({ ctx: serviceContext(c), input: c.req.valid("query") }), 200),
  );
  app.openapi(
    createRoute({
      operationId: "getCluster",
      method: "get",
      path: "/v1/clusters/{id}",
      tags: ["Clusters"],
      summary: "Get a cluster",
      description: "Returns one cluster with its connection state and GPU inventory.",
      security: bearerSecurity,
      request: { params: z.object({ id: z.string().max(64).meta({ param: { name: "id", in: "path" } }) }) },
      responses: { 200: jsonContent(Cluster, "The cluster"), ...problems(...AUTH_PROBLEMS, 404) },
    }),
    async (c) => c.json(await getCluster({ ctx: serviceContext(c), input: c.req.valid("param") }), 200),
  );
  app.openapi(
    createRoute({
      operationId: "registerAgent",
      method: "post",
      path: "/v1/agent/register",
      tags: ["Agent"],
      summary: "Exchange a join token for an agent credential (ba_…)",
      description: "Authenticated by the one-time join token in the body (no bearer key): answers the cluster id and the agent credential (ba_\u2026), shown once.",
      security: [],
      request: { body: jsonBody(z.strictObject({ joinToken: z.string().min(1).max(256) }).meta({ id: "AgentRegister" }), "The join token") },
      responses: {
        201: jsonContent(z.object({ clusterId: z.string().max(LIMITS.id), token: z.string().max(LIMITS.token) }).meta({ id: "AgentCredential" }), "The credential; shown once"),
        ...problems(400, 401, 413, 415, 429, 500),
      },
    }),
    async (c) => c.json(await registerAgent({ ctx: systemContext(c), input: c.req.valid("json") }), 201),
  );
  registerClusterLifecycleRoutes(app);
}
