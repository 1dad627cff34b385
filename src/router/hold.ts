// Scale-to-zero holding: a request whose role has no endpoints waits here (bounded in count
// and time) until the next endpoint push, then routes again. Nothing else ever waits.
import { Aborted, type Exchange } from "./exchange.ts";

export type HoldOutcome = "released" | "timeout" | "full" | "closing";

interface Waiter {
  wake(outcome: HoldOutcome): void;
}

export class HoldQueue {
  private readonly waiters = new Set<Waiter>();
  private closing = false;

  constructor(
    private readonly max: number,
    private readonly timeoutMs: number,
  ) {}

  get size(): number {
    return this.waiters.size;
  }

  /** Waits for the next release; the deadline is set on the exchange's first hold. Rejects with Aborted. */
  wait(exchange: Exchange): Promise<HoldOutcome> {
    if (exchange.abortReason !== undefined) return Promise.reject(new Aborted(exchange.abortReason));
    if (this.closing) return Promise.resolve("closing");
    if (this.waiters.size >= this.max) return Promise.resolve("full");
    exchange.holdDeadline ??= performance.now() + this.timeoutMs;
    const remaining = exchange.holdDeadline - performance.now();
    if (remaining <= 0) return Promise.resolve("timeout");
    return new Promise((resolve, reject) => {
      const waiter: Waiter = {
        wake: (outcome) => {
          this.waiters.delete(waiter);
          clearTimeout(timer);
          unregister();
          resolve(outcome);
        },
      };
      const timer = setTimeout(() => waiter.wake("timeout"), remaining);
      const unregister = exchange.onAbort((reason) => {
        this.waiters.delete(waiter);
        clearTimeout(timer);
        reject(new Aborted(reason));
      });
      this.waiters.add(waiter);
    });
  }

  /** Lets every held request route again (after an endpoint push). */
  releaseAll(): void {
    for (const waiter of [...this.waiters]) waiter.wake("released");
  }

  /** The router is stopping: held requests are answered now, new ones are not held. */
  close(): void {
    this.closing = true;
    for (const waiter of [...this.waiters]) waiter.wake("closing");
  }
}
