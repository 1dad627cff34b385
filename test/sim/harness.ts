// Runs `berth sim-engine` as a real child process on a free loopback port (--port 0; the URL comes
// from its "listening" log line) and offers small helpers: SSE reading with timings, metric lookup.
// Every process started here is killed by pid when the test file ends.
import { spawn, type ChildProcess } from "node:child_process";
import { join } from "node:path";
import { afterAll } from "vitest";

const BIN = join(import.meta.dirname, "../../bin/berth.js");

export interface SimProcess {
  child: ChildProcess;
  url: string;
  port: number;
  startedAt: number;
  listeningAfterMs: number;
  stdout(): string;
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  /** Sends SIGTERM and waits for the exit (SIGKILL after 8 s). */
  stop(): Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  /** The first line of stdout that has this text, parsed. */
  logLine(text: string): Record<string, unknown> | undefined;
}

const started = new Set<ChildProcess>();

afterAll(() => {
  for (const child of started) if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
});

export function startSim(simFlags: string[], engine: string[], env: Record<string, string> = {}): Promise<SimProcess> {
  const startedAt = Date.now();
  const child = spawn(process.execPath, [BIN, "sim-engine", ...simFlags, "--", ...engine], {
    env: { ...process.env, LOG_LEVEL: "info", ...env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  started.add(child);
  let out = "";
  let err = "";
  child.stdout!.on("data", (chunk) => (out += chunk));
  child.stderr!.on("data", (chunk) => (err += chunk));
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.once("exit", (code, signal) => resolve({ code, signal })),
  );
  const logLine = (text: string) => {
    const line = out.split("\n").find((entry) => entry.includes(text));
    return line ? (JSON.parse(line) as Record<string, unknown>) : undefined;
  };
  return new Promise((resolve, reject) => {
    const deadline = setTimeout(() => reject(new Error(`sim-engine did not listen within 10 s:\n${out}\n${err}`)), 10_000);
    const poll = setInterval(() => {
      const line = logLine("listening on");
      if (!line) return;
      clearInterval(poll);
      clearTimeout(deadline);
      resolve({
        child,
        url: String(line.url),
        port: Number(line.port),
        startedAt,
        listeningAfterMs: Date.now() - startedAt,
        stdout: () => out,
        exited,
        logLine,
        stop: async () => {
          child.kill("SIGTERM");
          // An engine that drains without bound (SGLang) is killed after a while.
          const timer = setTimeout(() => child.kill("SIGKILL"), 8000);
          const result = await exited;
          clearTimeout(timer);
          return result;
        },
      });
    }, 10);
    void exited.then(({ code }) => {
      clearInterval(poll);
      clearTimeout(deadline);
      reject(new Error(`sim-engine exited ${code} before listening:\n${out}\n${err}`));
    });
  });
}

export function post(url: string, body: unknown, headers: Record<string, string> = {}, signal?: AbortSignal): Promise<Response> {
  return fetch(url, {
    method: "POST",
    headers: { "content-type": "application/json", ...headers },
    body: typeof body === "string" ? body : JSON.stringify(body),
    signal,
  });
}

export interface SseResult {
  events: string[];
  /** Parsed JSON of every event but [DONE]. */
  chunks: Record<string, any>[];
  /** ms from the request to the first chunk carrying text. */
  firstTextMs: number;
  totalMs: number;
}

/** Reads an SSE answer to the end, timing the first chunk with text. */
export async function readSse(response: Response, sentAt: number): Promise<SseResult> {
  const reader = response.body!.getReader();
  const decoder = new TextDecoder();
  let buffer = "";
  const events: string[] = [];
  let firstTextMs = Number.NaN;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    buffer += decoder.decode(value, { stream: true });
    let split: number;
    while ((split = buffer.indexOf("\n\n")) >= 0) {
      const event = buffer.slice(0, split);
      buffer = buffer.slice(split + 2);
      events.push(event);
      if (Number.isNaN(firstTextMs) && /"(content|text)":"[^"]/.test(event)) firstTextMs = Date.now() - sentAt;
    }
  }
  const chunks = events.filter((event) => event !== "data: [DONE]").map((event) => JSON.parse(event.replace(/^data: /, "")) as Record<string, any>);
  return { events, chunks, firstTextMs, totalMs: Date.now() - sentAt };
}

/** Sum of a metric's samples whose labels include every given label. */
export function metricValue(text: string, name: string, labels: Record<string, string> = {}): number | undefined {
  let total: number | undefined;
  for (const line of text.split("\n")) {
    if (!line.startsWith(name + "{") && !line.startsWith(name + " ")) continue;
    const match = /^([^{ ]+)(?:\{(.*)\})? (.+)$/.exec(line);
    if (!match || match[1] !== name) continue;
    const found: Record<string, string> = {};
    for (const pair of (match[2] ?? "").matchAll(/(\w+)="([^"]*)"/g)) found[pair[1]!] = pair[2]!;
    if (Object.entries(labels).every(([key, value]) => found[key] === value)) total = (total ?? 0) + Number(match[3]);
  }
  return total;
}

/** The values one label takes across a metric's samples. */
export function labelValues(text: string, name: string, label: string): string[] {
  const values = new Set<string>();
  for (const line of text.split("\n")) {
    if (!line.startsWith(name + "{")) continue;
    const match = new RegExp(`${label}="([^"]*)"`).exec(line);
    if (match) values.add(match[1]!);
  }
  return [...values].sort();
}

export async function scrape(url: string): Promise<string> {
  const response = await fetch(`${url}/metrics`);
  return response.text();
}

/** Polls `check` every 20 ms until it returns a value other than undefined, or fails after `ms`. */
export async function eventually<T>(check: () => Promise<T | undefined>, ms = 5000): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const value = await check();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error("condition not met in time");
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
