// One client request in flight and one abort signal for everything working on it (client
// gone, or the per-request timeout); every upstream call registers here. Child scopes
// cancel one leg (an SGLang decode whose prefill failed) without touching the client.
import type { ServerResponse } from "node:http";

/** client: the client went away; timeout: the per-request limit; cancelled: the router gave up on one leg. */
export type AbortReason = "client" | "timeout" | "cancelled";

export class Aborted extends Error {
  constructor(readonly reason: AbortReason) {
    super(reason === "client" ? "the client went away" : reason === "timeout" ? "the request timed out" : "cancelled");
  }
}

export class AbortScope {
  abortReason: AbortReason | undefined;
  private readonly handlers = new Set<(reason: AbortReason) => void>();

  get aborted(): boolean {
    return this.abortReason !== undefined;
  }

  /** Runs `handler` on abort (at once if already aborted); returns its unregistration. */
  onAbort(handler: (reason: AbortReason) => void): () => void {
    if (this.abortReason !== undefined) {
      handler(this.abortReason);
      return () => {};
    }
    this.handlers.add(handler);
    return () => this.handlers.delete(handler);
  }

  abort(reason: AbortReason): void {
    if (this.abortReason !== undefined) return;
    this.abortReason = reason;
    for (const handler of [...this.handlers]) handler(reason);
    this.handlers.clear();
  }

  /** A scope that aborts with this one but can also be aborted alone. */
  child(): AbortScope {
    const scope = new AbortScope();
    this.onAbort((reason) => scope.abort(reason));
    return scope;
  }

  /** Resolves after `ms`, or rejects with Aborted as soon as the scope aborts. */
  sleep(ms: number): Promise<void> {
    return new Promise((resolve, reject) => {
      let unregister = () => {};
      const timer = setTimeout(() => {
        unregister();
        resolve();
      }, ms);
      unregister = this.onAbort((reason) => {
        clearTimeout(timer);
        reject(new Aborted(reason));
      });
    });
  }
}

export class Exchange extends AbortScope {
  readonly arrivedAt = performance.now();
  /** Set on the first hold (scale-to-zero), so re-holds keep one deadline. */
  holdDeadline: number | undefined;
  private readonly timer: NodeJS.Timeout;

  constructor(
    readonly res: ServerResponse,
    timeoutMs: number,
    /** The client's X-Request-Id, if it sent one. */
    readonly clientRequestId: string | undefined,
  ) {
    super();
    this.timer = setTimeout(() => this.abort("timeout"), timeoutMs);
    res.once("close", () => {
      clearTimeout(this.timer);
      if (!res.writableFinished) this.abort("client");
    });
  }

  override abort(reason: AbortReason): void {
    clearTimeout(this.timer);
    super.abort(reason);
  }
}
