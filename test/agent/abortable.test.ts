// The agent's waits leave no listener behind on its shared AbortSignal.
import { getEventListeners } from "node:events";
import { describe, expect, it } from "vitest";
import { sleepUnlessAborted, withChildSignal } from "../../src/agent/abortable.ts";

describe("waiting on a shared AbortSignal", () => {
  it("removes each sleep's listener once the sleep ends", async () => {
    const controller = new AbortController();
    await Promise.all(Array.from({ length: 50 }, () => sleepUnlessAborted(1, controller.signal)));
    expect(getEventListeners(controller.signal, "abort")).toHaveLength(0);
  });

  it("ends a sleep at once when the signal aborts", async () => {
    const controller = new AbortController();
    const sleeping = sleepUnlessAborted(60_000, controller.signal).then(() => "woken");
    controller.abort();
    expect(await sleeping).toBe("woken");
  });

  it("gives each task a child signal, unlinked from the parent when the task settles", async () => {
    const controller = new AbortController();
    const children: AbortSignal[] = [];
    for (let i = 0; i < 50; i++) await withChildSignal(controller.signal, async (signal) => void children.push(signal!));
    await withChildSignal(controller.signal, async () => Promise.reject(new Error("failed"))).catch(() => {});
    expect(getEventListeners(controller.signal, "abort")).toHaveLength(0);
    expect(new Set(children).size).toBe(50);
  });

  it("aborts the child with the parent while the task runs", async () => {
    const controller = new AbortController();
    const reason = await withChildSignal(controller.signal, (signal) => {
      controller.abort(new Error("stopping"));
      return Promise.resolve((signal!.reason as Error).message);
    });
    expect(reason).toBe("stopping");
  });
});
