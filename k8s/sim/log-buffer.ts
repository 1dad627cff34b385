// The last lines a container wrote (stdout and stderr interleaved as they arrived), with
// their arrival times, for `GET …/pods/{name}/log` (`tailLines`, `limitBytes`,
// `sinceSeconds`, `timestamps`, `follow`). Bounded: the oldest lines go first.
export interface LogReadOptions {
  tailLines?: number;
  limitBytes?: number;
  sinceSeconds?: number;
  timestamps?: boolean;
}

interface Line {
  at: number;
  text: string;
}

/** RFC 3339 with nanoseconds, as the kubelet stamps log lines. */
const nanoTimestamp = (ms: number) => new Date(ms).toISOString().replace(/\.(\d{3})Z$/, ".$1000000Z");

export class LogBuffer {
  readonly #lines: Line[] = [];
  readonly #partial = new Map<string, string>();
  readonly #followers = new Set<{ onText(text: string): void; onEnd(): void }>();
  #closed = false;

  constructor(private readonly maxLines = 5000) {}

  /** Appends a chunk from one stream; lines complete at "\n" (a partial line waits for the rest). */
  append(stream: string, chunk: string): void {
    const text = (this.#partial.get(stream) ?? "") + chunk;
    const parts = text.split("\n");
    this.#partial.set(stream, parts.pop()!);
    for (const part of parts) this.#push(part);
  }

  /** Notes a line of the kubelet's own (e.g. why a process could not start). */
  note(text: string): void {
    this.#push(text);
  }

  #push(text: string): void {
    const line = { at: Date.now(), text };
    this.#lines.push(line);
    if (this.#lines.length > this.maxLines) this.#lines.splice(0, this.#lines.length - this.maxLines);
    for (const follower of this.#followers) follower.onText(`${text}\n`);
  }

  /** Flushes partial lines and ends every follower: the process is gone. */
  close(): void {
    if (this.#closed) return;
    for (const [stream, rest] of this.#partial) if (rest !== "") this.#push(rest), this.#partial.set(stream, "");
    this.#closed = true;
    for (const follower of this.#followers) follower.onEnd();
    this.#followers.clear();
  }

  get closed(): boolean {
    return this.#closed;
  }

  get lastLine(): string | undefined {
    return this.#lines[this.#lines.length - 1]?.text;
  }

  read(options: LogReadOptions = {}): string {
    let lines = this.#lines;
    if (options.sinceSeconds !== undefined) {
      const since = Date.now() - options.sinceSeconds * 1000;
      lines = lines.filter((line) => line.at >= since);
    }
    if (options.tailLines !== undefined && options.tailLines >= 0) lines = options.tailLines === 0 ? [] : lines.slice(-options.tailLines);
    let text = lines.map((line) => (options.timestamps ? `${nanoTimestamp(line.at)} ${line.text}\n` : `${line.text}\n`)).join("");
    if (options.limitBytes !== undefined && options.limitBytes >= 0) text = Buffer.from(text).subarray(0, options.limitBytes).toString("utf8");
    return text;
  }

  /** Streams lines written from now on until the buffer closes; returns the unsubscribe function. */
  follow(onText: (text: string) => void, onEnd: () => void): () => void {
    if (this.#closed) {
      onEnd();
      return () => {};
    }
    const follower = { onText, onEnd };
    this.#followers.add(follower);
    return () => this.#followers.delete(follower);
  }
}
