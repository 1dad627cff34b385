// The webhook dispatcher loop of long-running entries (`berth serve`, the Deno entry):
// a few workers each call dispatchWebhooks, again at once while a batch was full, otherwise
// after `idleMs` (retries come due with time) — or as soon as the database announces a new
// event (LISTEN), so a delivery usually leaves within milliseconds of its event's commit. Nothing is kept in
// memory: stopping (or dying) anywhere loses nothing (see dispatch-webhooks.ts).
import { EVENTS_CHANNEL } from "../../db/queries/events.ts";
import type { SystemContext } from "../services/context.ts";
import { errorForLog } from "../services/log-error.ts";
import { dispatchWebhooks } from "../services/webhooks/dispatch-webhooks.ts";
import type { Logger } from "./env.ts";

export interface DispatcherOptions {
  ctx: SystemContext;
  logger: Logger;
  /** The database's LISTEN, when its driver has one (db/client.ts `Database.listen`). */
  listen?: (channel: string, onNotify: () => void) => Promise<() => Promise<void>>;
  /** Concurrent dispatch passes in this process (each sends up to claimBatch deliveries). */
  workers?: number;
  /** Pause between passes when there was nothing to do. */
  idleMs?: number;
}

export interface DispatcherLoop {
  /** Wakes idle workers now (e.g. after a redelivery on this instance). */
  wake(): void;
  /** Stops after the passes in flight finish. */
  stop(): Promise<void>;
}

const ERROR_PAUSE_MS = 1000;

export function startWebhookDispatcher(options: DispatcherOptions): DispatcherLoop {
  const { ctx, logger } = options;
  const idleMs = options.idleMs ?? 500;
  let stopped = false;
  // A notification wakes one idle worker (the others stay asleep unless more arrive); one
  // that comes while every worker is busy is kept, so the next to finish goes on at once.
  const sleepers: Array<() => void> = [];
  let missedWake = false;
  const wakeOne = () => {
    const resume = sleepers.shift();
    if (resume) resume();
    else missedWake = true;
  };
  const wakeAll = () => {
    while (sleepers.length > 0) sleepers.shift()!();
  };
  const sleep = (ms: number) =>
    new Promise<void>((resolve) => {
      if (missedWake) {
        missedWake = false;
        return resolve();
      }
      const resume = () => {
        clearTimeout(timer);
        const index = sleepers.indexOf(resume);
        if (index >= 0) sleepers.splice(index, 1);
        resolve();
      };
      const timer = setTimeout(resume, ms);
      sleepers.push(resume);
    });

  const unlisten = options.listen?.(EVENTS_CHANNEL, wakeOne).catch((error: unknown) => {
    logger.warn({ error: errorForLog(error) }, "webhook dispatcher: LISTEN failed; polling only");
    return undefined;
  });

  const work = async () => {
    while (!stopped) {
      let busy = false;
      try {
        // A pass sends what it fanned out itself, so only a full batch means work is waiting.
        busy = (await dispatchWebhooks({ ctx })).more;
      } catch (error) {
        if (stopped) break;
        logger.warn({ error: errorForLog(error) }, "webhook dispatch failed; will retry");
        await sleep(ERROR_PAUSE_MS);
        continue;
      }
      if (!busy && !stopped) await sleep(idleMs);
    }
  };
  const workers = Array.from({ length: options.workers ?? 2 }, () => work());

  return {
    wake: wakeOne,
    async stop() {
      stopped = true;
      wakeAll();
      await Promise.all(workers);
      const close = await unlisten;
      await close?.();
    },
  };
}
