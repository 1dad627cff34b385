// Waiting on the agent's one long-lived AbortSignal without leaving listeners on it. Every
// listener added here is removed when its wait ends, so thousands of sleeps and requests
// over the agent's life leave the shared signal with only the waits still in progress.

/** Resolves after `ms`, or at once when `signal` aborts; never rejects. */
export function sleepUnlessAborted(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise<void>((resolve) => {
    if (signal?.aborted) return resolve();
    const done = () => {
      clearTimeout(timer);
      signal?.removeEventListener("abort", done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    signal?.addEventListener("abort", done, { once: true });
  });
}

/**
 * Runs `task` with a signal of its own that aborts when `parent` does. fetch keeps a listener
 * on the signal it is given until that signal is garbage-collected, so a shared signal handed
 * to every fetch collects one listener per request; a per-request child is dropped afterwards.
 */
export async function withChildSignal<T>(parent: AbortSignal | undefined, task: (signal: AbortSignal | undefined) => Promise<T>): Promise<T> {
  if (!parent) return task(undefined);
  const child = new AbortController();
  const forward = () => child.abort(parent.reason);
  if (parent.aborted) forward();
  else parent.addEventListener("abort", forward, { once: true });
  try {
    return await task(child.signal);
  } finally {
    parent.removeEventListener("abort", forward);
  }
}
