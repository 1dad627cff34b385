// fetch() in this process reaching pod and Service addresses inside a test cluster's network
// namespace: a global undici dispatcher whose connector carries connections to those ranges
// through the namespace's relay (netns-relay.mjs), and every other connection as usual. Tests
// and in-process agents then use the addresses the cluster reports (status.podIP, a Service's
// ClusterIP) unchanged. Node's own fetch reads the same global dispatcher as the undici package.
import { createConnection } from "node:net";
import { Agent, buildConnector, type Dispatcher, getGlobalDispatcher, setGlobalDispatcher } from "undici";

/** 10.244.0.0/16 (pods) and 10.96.0.0/16 (Services), the ranges control-plane.ts makes local inside the namespace. */
export function insideCluster(host: string): boolean {
  return /^10\.(244|96)\.\d{1,3}\.\d{1,3}$/.test(host);
}

/** Routes fetch() to the cluster's ranges through `relaySocket` until the returned function restores the previous dispatcher. */
export function routeFetchInto(relaySocket: string): () => void {
  const direct = buildConnector({});
  const previous: Dispatcher = getGlobalDispatcher();
  const agent = new Agent({
    connect(options, callback) {
      if (!insideCluster(options.hostname)) return direct(options, callback);
      const socket = createConnection(relaySocket);
      socket.once("connect", () => {
        socket.write(`CONNECT ${options.hostname}:${options.port || (options.protocol === "https:" ? 443 : 80)}\n`);
        callback(null, socket);
      });
      socket.once("error", (error) => callback(error, null));
    },
  });
  setGlobalDispatcher(agent);
  return () => {
    setGlobalDispatcher(previous);
    void agent.close();
  };
}
