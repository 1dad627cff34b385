// After a start, an executor first learns which of its operations are still Pending or Running, so
// a restarted agent picks up exactly the work it had recorded (and starts none beside it). The API
// may be down: the list is retried with capped backoff until it answers or the agent stops.
import type { Operation, OperationKind } from "../domain/operations.ts";
import type { AgentApi } from "./api-client.ts";

/**
 * An executor's start: its active operations (one per deployment) go into `active` and each
 * deployment is woken. false when the agent stopped before the list came.
 */
export async function resumeOperations(
  api: AgentApi,
  kind: OperationKind,
  options: {
    signal: AbortSignal;
    stopped: () => boolean;
    logger: { info(msg: string, data?: object): void; warn(msg: string, data?: object): void };
    active: Map<string, Operation>;
    wake: (deploymentId: string) => void;
  },
): Promise<boolean> {
  const { logger, active, wake } = options;
  const ops = await listActiveOperations(api, kind, { signal: options.signal, stopped: options.stopped, warn: logger.warn.bind(logger) });
  if (!ops) return false;
  for (const op of ops) if (!active.has(op.deploymentId)) active.set(op.deploymentId, op);
  if (ops.length > 0) logger.info(`${kind} operations resumed`, { operations: ops.map((op) => op.id) });
  for (const op of ops) wake(op.deploymentId);
  return true;
}

async function listActiveOperations(
  api: AgentApi,
  kind: OperationKind,
  { signal, stopped, warn }: { signal: AbortSignal; stopped: () => boolean; warn: (msg: string, data?: object) => void },
): Promise<Operation[] | undefined> {
  for (let attempt = 0; !stopped() && !signal.aborted; attempt++) {
    try {
      return await api.listOperations({ kind, phase: ["Pending", "Running"] }, signal);
    } catch (error) {
      if (signal.aborted) return undefined;
      warn(`${kind} operations could not be listed; retrying`, { error: (error as Error).message });
      await new Promise((resolve) => setTimeout(resolve, Math.min(10_000, 500 * 2 ** attempt)));
    }
  }
  return undefined;
}
