// A keyed work queue for the in-process controllers: work for one key runs one at a time
// (a key added while its work runs runs once more afterwards), different keys run in
// parallel, and a failing key is retried with capped exponential backoff so one broken
// object never stalls the others.
export class WorkQueue {
  readonly #queued = new Set<string>();
  readonly #running = new Set<string>();
  readonly #dirty = new Set<string>();
  readonly #failures = new Map<string, number>();
  readonly #timers = new Set<NodeJS.Timeout>();
  #closed = false;

  constructor(
    private readonly work: (key: string) => Promise<void>,
    private readonly name: string,
  ) {}

  add(key: string): void {
    if (this.#closed) return;
    if (this.#running.has(key)) {
      this.#dirty.add(key);
      return;
    }
    if (this.#queued.has(key)) return;
    this.#queued.add(key);
    setImmediate(() => void this.#run(key));
  }

  addAfter(key: string, ms: number): void {
    if (this.#closed) return;
    const timer = setTimeout(() => {
      this.#timers.delete(timer);
      this.add(key);
    }, ms);
    timer.unref();
    this.#timers.add(timer);
  }

  async #run(key: string): Promise<void> {
    this.#queued.delete(key);
    if (this.#closed) return;
    this.#running.add(key);
    try {
      await this.work(key);
      this.#failures.delete(key);
    } catch (error) {
      const failures = (this.#failures.get(key) ?? 0) + 1;
      this.#failures.set(key, failures);
      if (!this.#closed) process.stderr.write(`berth-sim ${this.name}: ${key}: ${(error as Error).message}\n`);
      this.addAfter(key, Math.min(100 * 2 ** failures, 10_000));
    } finally {
      this.#running.delete(key);
      if (this.#dirty.delete(key)) this.add(key);
    }
  }

  close(): void {
    this.#closed = true;
    for (const timer of this.#timers) clearTimeout(timer);
    this.#timers.clear();
  }
}
