// A cluster after registration: a new join token, revoking its agent's credentials, and
// deleting it (refused while deployments are placed on it, unless they are moved).
import { createRoute, type OpenAPIHono } from "@hono/zod-openapi";
import { z } from "zod";
import { serviceContext, type AppEnv } from "../../src/api/env.ts";
import { AUTH_PROBLEMS, bearerSecurity, jsonContent, problems } from "../../src/api/route-kit.ts";
import { Cluster } from "../../src/domain/cluster.ts";
import { issueJoinToken, revokeAgentCredentials } from "../../src/services/clusters/agent-credentials.ts";
import { deleteCluster } from "../../src/services/clusters/delete-cluster.ts";
import { counter, id, LIMITS, text, timestamp } from "../../src/domain/limits.ts";

const ClusterParams = z.object({ id: z.string().max(64).meta({ param: { name: "id", in: "path" }, description: "Cluster id" }) });
const base = { tags: ["Clusters"], security: bearerSecurity };

export function registerClusterLifecycleRoutes(app: OpenAPIHono<AppEnv>) {
  app.openapi(
    createRoute({
      ...base,
      operationId: "issueClusterJoinToken",
      method: "post",
      path: "/v1/clusters/{id}/join-token",
      summary: "Issue a new one-time join token for a cluster (installation admin); the previous one stops working",
      description: "For an agent that must register again, e.g. after its credentials were revoked. Valid for 1 h, works once.",
      request: { params: ClusterParams },
      responses: {
        200: jsonContent(
          z.object({ cluster: Cluster, joinToken: text(LIMITS.token), expiresAt: timestamp() }).meta({ id: "ClusterJoinToken" }),
          "The token, shown only now",
        ),
        ...problems(...AUTH_PROBLEMS, 404),
      },
    }),
    async (c) => c.json(await issueJoinToken({ ctx: serviceContext(c), input: c.req.valid("param") }), 200),
  );
  app.openapi(
    createRoute({
      ...base,
      operationId: "revokeClusterCredentials",
      method: "post",
      path: "/v1/clusters/{id}/credentials/revoke",
      summary: "Revoke every agent credential of a cluster (installation admin)",
      description:
        "The agent's requests get 401 at once on every API instance, and its open long-polls end within 5 s; " +
        "it must register again with a new join token (POST /v1/clusters/{id}/join-token).",
      request: { params: ClusterParams },
      responses: {
        200: jsonContent(
          z.object({ clusterId: id(), revoked: counter().describe("Credentials revoked by this call") }).meta({
            id: "ClusterCredentialsRevoked",
          }),
          "What was revoked",
        ),
        ...problems(...AUTH_PROBLEMS, 404),
      },
    }),
    async (c) => c.json(await revokeAgentCredentials({ ctx: serviceContext(c), input: c.req.valid("param") }), 200),
  );
  app.openapi(
    createRoute({
      ...base,
      operationId: "deleteCluster",
      method: "delete",
      path: "/v1/clusters/{id}",
      summary: "Delete a cluster and revoke its agent (installation admin)",
      description:
        "Refused with 409 naming the deployments placed on the cluster (at most 20, then a count) unless moveTo names " +
        "another cluster: they are then reassigned there in the same transaction and that cluster's agent creates them. " +
        "The deleted cluster's agent is revoked and told nothing more; it never deletes on losing contact, so remove " +
        "what it ran by uninstalling it. Records cluster.deleted.",
      request: {
        params: ClusterParams,
        query: z.object({
          moveTo: z.string().max(64).optional().describe("Reassign the cluster's deployments to this cluster, then delete"),
        }),
      },
      responses: { 204: { description: "Deleted" }, ...problems(...AUTH_PROBLEMS, 404, 409) },
    }),
    async (c) => {
      await deleteCluster({ ctx: serviceContext(c), input: { ...c.req.valid("param"), moveTo: c.req.valid("query").moveTo } });
      return c.body(null, 204);
    },
  );
}
