// One simulated engine rank: vLLM-style continuous batching in virtual time. Each step takes the
// decoding requests, continues chunked prefills, admits waiting requests (FCFS, bounded by
// max running sequences, the token budget and free KV blocks), asks the perf model how long that
// batch takes, and a real timer fires when the step's virtual end comes due. Tokens, TTFT and
// preemptions all follow from the model; nothing here sleeps a made-up delay.
import { attendedPairs, stepTimeMs, type PerfModel, type StepShape } from "../domain/perf-model.ts";
import { KvBlockPool } from "./kv-cache.ts";

export type FinishReason = "stop" | "length" | "abort";

export interface RequestListener {
  /** Admitted into the running batch: `cachedTokens` came from the prefix cache. */
  onScheduled?(info: { cachedTokens: number; atMs: number }): void;
  /** Output token `index` exists at virtual time `atMs` (epoch ms). */
  onToken(index: number, atMs: number): void;
  onFinish(reason: FinishReason, atMs: number): void;
}

export interface EngineRequest {
  id: string;
  promptTokens: number;
  /** Chained hashes of the prompt's full blocks (tokens.ts blockHashes). */
  blockHashes: readonly string[];
  /** Tokens to generate (≥ 1) before finishing with `finishReason`. */
  outputTokens: number;
  finishReason: "stop" | "length";
  /** The prompt's KV arrives from a prefill server after this many model-ms: no prefill compute here. */
  remotePrefillMs?: number;
  /**
   * Model-ms of the vision encoder for the prompt's images, run inside the step that schedules the
   * request's first prefill chunk (vLLM's model runner runs `_execute_mm_encoder` before that
   * step's forward), so it lengthens the step for every sequence in it. Images whose placeholders
   * the prefix cache already holds need no encoding: the cost is charged pro rata to the uncached share.
   * With `remotePrefillMs` (an EC producer: no language-model prefill) it is charged in full to the
   * step that admits the request, so concurrent encoder requests share the GPU's steps.
   */
  encodeMs?: number;
  listener: RequestListener;
}

export interface SchedulerObserver {
  /** A request was admitted: `queried` prompt tokens looked up, `hit` of them cached. */
  prefixLookup(queried: number, hit: number): void;
  preempted(): void;
  /** A step with prefill ran: its cached and newly computed prompt tokens (SGLang's cache_hit_rate). */
  prefillBatch(hitTokens: number, newTokens: number): void;
  /** Output tokens produced by a step. */
  tokensGenerated(count: number): void;
}

export interface SchedulerLimits {
  /** vLLM `--max-num-seqs`, SGLang `--max-running-requests`. */
  maxRunning: number;
  /** vLLM `--max-num-batched-tokens`, SGLang `--chunked-prefill-size`: tokens per step. */
  maxBatchedTokens: number;
  prefixCaching: boolean;
}

export interface Timers {
  now(): number;
  after(ms: number, run: () => void): () => void;
}

export const realTimers: Timers = {
  now: () => Date.now(),
  after(ms, run) {
    const timer = ms <= 0 ? setImmediate(run) : setTimeout(run, ms);
    return () => (ms <= 0 ? clearImmediate(timer as NodeJS.Immediate) : clearTimeout(timer as NodeJS.Timeout));
  },
};

type SeqState = "transferring" | "waiting" | "prefill" | "decode" | "done";

interface Seq {
  req: EngineRequest;
  state: SeqState;
  arrivedAt: number;
  readyAt: number;
  /** Tokens the prefill must cover: the prompt, plus output so far after a preemption. */
  prefillTarget: number;
  computed: number;
  /** Prompt tokens the prefix cache supplied at the latest admission; reported with the first chunk. */
  pendingHit?: number;
  generated: number;
  heldHashes: string[];
  privateBlocks: number;
  /** Whether its images were encoded (charged to a step) already. */
  encoded?: boolean;
}

interface PlannedStep {
  prefill: { seq: Seq; chunk: number }[];
  decode: Seq[];
  endsAt: number;
}

/** Steps run back to back in virtual time; if timers fall this far behind, virtual time resyncs. */
const MAX_LAG_MS = 50;
/** Steps computed in one go before yielding to I/O when they are already due (zero latency). */
const STEPS_PER_TICK = 256;

export class EngineScheduler {
  readonly pool: KvBlockPool;
  private readonly waiting: Seq[] = [];
  private readonly transferring: Seq[] = [];
  private readonly running: Seq[] = [];
  private current?: PlannedStep;
  private lastStepEnd = 0;
  private cancelTimer?: () => void;
  private wakeScheduled = false;
  private readonly idleWaiters: (() => void)[] = [];
  private stopped = false;

  constructor(
    readonly perf: PerfModel,
    private readonly limits: SchedulerLimits,
    /** Real ms per model ms: 1 real time, 0.1 the `fast` profile, 0 answers at once. */
    private readonly timeScale: number,
    private readonly observer: SchedulerObserver,
    private readonly timers: Timers = realTimers,
  ) {
    this.pool = new KvBlockPool(perf.kvBlocks, perf.shape.blockSize);
  }

  get numRunning(): number {
    return this.running.length;
  }

  get numWaiting(): number {
    return this.waiting.length;
  }

  get numTransferring(): number {
    return this.transferring.length;
  }

  get inFlight(): number {
    return this.running.length + this.waiting.length + this.transferring.length;
  }

  /** Whether a prompt of this many tokens can ever be admitted. */
  fits(promptTokens: number): boolean {
    return this.pool.blocksFor(promptTokens + 1) <= this.pool.totalBlocks;
  }

  submit(req: EngineRequest): { abort(): void } {
    const now = this.timers.now();
    const seq: Seq = {
      req,
      state: "waiting",
      arrivedAt: now,
      readyAt: now,
      prefillTarget: req.promptTokens,
      computed: 0,
      generated: 0,
      heldHashes: [],
      privateBlocks: 0,
    };
    if (this.stopped) {
      req.listener.onFinish("abort", now);
      return { abort() {} };
    }
    if (req.remotePrefillMs !== undefined && req.remotePrefillMs > 0) {
      seq.state = "transferring";
      seq.readyAt = now + req.remotePrefillMs * this.timeScale;
      this.transferring.push(seq);
    } else {
      this.waiting.push(seq);
    }
    this.wake();
    return { abort: () => this.abort(seq, this.timers.now()) };
  }

  /** Ends every request with `abort` (scale-down of this rank, shutdown without drain). */
  abortAll(): void {
    const now = this.timers.now();
    for (const seq of [...this.running, ...this.waiting, ...this.transferring]) this.abort(seq, now);
  }

  /** Stops stepping for good; later submissions end at once with `abort`. */
  stop(): void {
    this.stopped = true;
    this.abortAll();
    this.cancelTimer?.();
    this.cancelTimer = undefined;
  }

  /** Resolves once no request is running, waiting or transferring. */
  whenIdle(): Promise<void> {
    if (this.inFlight === 0) return Promise.resolve();
    return new Promise((resolve) => this.idleWaiters.push(resolve));
  }

  resetPrefixCache(): void {
    this.pool.resetCache();
  }

  private abort(seq: Seq, now: number): void {
    if (seq.state === "done") return;
    this.remove(seq);
    seq.state = "done";
    seq.req.listener.onFinish("abort", now);
    this.notifyIdle();
  }

  private remove(seq: Seq): void {
    if (seq.state === "prefill" || seq.state === "decode") {
      this.running.splice(this.running.indexOf(seq), 1);
      this.pool.release(seq.heldHashes, seq.privateBlocks);
      seq.heldHashes = [];
      seq.privateBlocks = 0;
    } else if (seq.state === "waiting") {
      this.waiting.splice(this.waiting.indexOf(seq), 1);
    } else if (seq.state === "transferring") {
      this.transferring.splice(this.transferring.indexOf(seq), 1);
    }
  }

  private notifyIdle(): void {
    if (this.inFlight > 0) return;
    for (const resolve of this.idleWaiters.splice(0)) resolve();
  }

  /** Starts stepping on the next turn of the event loop unless a step is already under way. */
  private wake(): void {
    if (this.current || this.wakeScheduled || this.stopped) return;
    this.cancelTimer?.();
    this.cancelTimer = undefined;
    this.wakeScheduled = true;
    this.timers.after(0, () => {
      this.wakeScheduled = false;
      if (!this.current) this.run(true);
    });
  }

  /** Completes due steps and plans the next one, until one lies in the future or there is no work. */
  private run(fromIdle: boolean): void {
    this.cancelTimer = undefined;
    let idle = fromIdle;
    for (let steps = 0; steps < STEPS_PER_TICK; steps++) {
      const now = this.timers.now();
      if (this.current) {
        if (this.current.endsAt > now) {
          this.cancelTimer = this.timers.after(this.current.endsAt - now, () => this.run(false));
          return;
        }
        this.complete(this.current);
        this.current = undefined;
      }
      if (this.stopped) return;
      const start = idle ? now : Math.max(this.lastStepEnd, now - MAX_LAG_MS);
      idle = false;
      this.admitTransfers(start);
      const plan = this.plan();
      if (!plan) {
        this.lastStepEnd = start;
        if (this.transferring.length > 0) {
          const next = Math.min(...this.transferring.map((seq) => seq.readyAt));
          this.cancelTimer = this.timers.after(next - now, () => this.run(true));
        }
        return;
      }
      const duration = (stepTimeMs(this.perf, plan.shape) + plan.encodeMs) * this.timeScale;
      this.current = { prefill: plan.prefill, decode: plan.decode, endsAt: start + duration };
      this.lastStepEnd = start + duration;
    }
    this.cancelTimer = this.timers.after(0, () => this.run(false));
  }

  private admitTransfers(now: number): void {
    for (const seq of [...this.transferring]) {
      if (seq.readyAt > now) continue;
      this.transferring.splice(this.transferring.indexOf(seq), 1);
      seq.state = "waiting";
      this.waiting.push(seq);
    }
  }

  private plan(): { prefill: { seq: Seq; chunk: number }[]; decode: Seq[]; encodeMs: number; shape: StepShape } | undefined {
    let budget = this.limits.maxBatchedTokens;
    const decode: Seq[] = [];
    const prefill: { seq: Seq; chunk: number }[] = [];
    let admittedEncodeMs = 0;

    // 1. Every decoding request produces one token; it needs a KV slot for it, preempting the
    //    newest running request (recompute later) when the pool is full.
    for (const seq of [...this.running]) {
      if (seq.state !== "decode") continue;
      if (!this.reserveNextSlot(seq)) continue;
      decode.push(seq);
      budget--;
    }
    // 2. Chunked prefills already running continue.
    for (const seq of this.running) {
      if (seq.state !== "prefill" || budget <= 0) continue;
      const chunk = Math.min(seq.prefillTarget - seq.computed, budget);
      prefill.push({ seq, chunk });
      budget -= chunk;
    }
    // 3. Admit waiting requests in arrival order while there is room; the head blocks the rest.
    while (this.waiting.length > 0 && budget > 0 && this.running.length < this.limits.maxRunning) {
      const seq = this.waiting[0]!;
      if (!this.admit(seq)) break;
      this.waiting.shift();
      this.running.push(seq);
      if (seq.state === "decode") {
        decode.push(seq);
        budget--;
        if (!seq.encoded && (seq.req.encodeMs ?? 0) > 0) {
          seq.encoded = true;
          admittedEncodeMs += seq.req.encodeMs!;
        }
      } else {
        const chunk = Math.min(seq.prefillTarget - seq.computed, budget);
        prefill.push({ seq, chunk });
        budget -= chunk;
      }
    }
    if (decode.length === 0 && prefill.length === 0) return undefined;

    let prefillTokens = 0;
    let prefillAttention = 0;
    let prefillContextTokens = 0;
    let encodeMs = admittedEncodeMs;
    for (const { seq, chunk } of prefill) {
      if (!seq.encoded && (seq.req.encodeMs ?? 0) > 0) {
        seq.encoded = true;
        encodeMs += seq.req.encodeMs! * Math.max(0, 1 - seq.computed / seq.req.promptTokens);
      }
      prefillTokens += chunk;
      prefillAttention += attendedPairs(seq.computed, chunk);
      prefillContextTokens += seq.computed;
    }
    let decodeContextTokens = 0;
    for (const seq of decode) decodeContextTokens += seq.req.promptTokens + seq.generated;
    return {
      prefill,
      decode,
      encodeMs,
      shape: {
        prefillTokens,
        prefillSequences: prefill.length,
        prefillAttention,
        prefillContextTokens,
        decodeSequences: decode.length,
        decodeContextTokens,
      },
    };
  }

  /** Reserves the KV slot `seq`'s next token needs; false if `seq` itself had to be preempted. */
  private reserveNextSlot(seq: Seq): boolean {
    const held = seq.heldHashes.length + seq.privateBlocks;
    const needed = this.pool.blocksFor(seq.req.promptTokens + seq.generated + 1) - held;
    if (needed <= 0) return true;
    while (!this.pool.allocate([], needed)) {
      const victim = this.running[this.running.length - 1]!;
      this.preempt(victim);
      if (victim === seq) return false;
    }
    seq.privateBlocks += needed;
    return true;
  }

  /** vLLM's recompute preemption: free the blocks, requeue at the front, prefill prompt + output again. */
  private preempt(seq: Seq): void {
    this.remove(seq);
    seq.state = "waiting";
    seq.computed = 0;
    seq.prefillTarget = seq.req.promptTokens + seq.generated;
    this.waiting.unshift(seq);
    this.observer.preempted();
  }

  private admit(seq: Seq): boolean {
    const { req } = seq;
    if (req.remotePrefillMs !== undefined && seq.generated === 0) {
      // The prompt's KV was transferred: take blocks for it and decode straight away.
      const blocks = this.pool.blocksFor(req.promptTokens);
      if (!this.pool.allocate([], blocks)) return false;
      seq.privateBlocks = blocks;
      seq.computed = req.promptTokens;
      seq.state = "decode";
      this.registerPromptBlocks(seq);
      req.listener.onScheduled?.({ cachedTokens: 0, atMs: this.timers.now() });
      return true;
    }
    let hitBlocks = this.limits.prefixCaching ? this.pool.matchPrefix(req.blockHashes) : 0;
    // At least one prompt token is always computed, so a fully cached prompt recomputes its last block.
    if (hitBlocks * this.pool.blockSize >= seq.prefillTarget) hitBlocks = Math.max(0, hitBlocks - 1);
    const pinned = req.blockHashes.slice(0, hitBlocks);
    const fresh = this.pool.blocksFor(seq.prefillTarget) - hitBlocks;
    if (!this.pool.allocate(pinned, fresh)) return false;
    const cachedTokens = hitBlocks * this.pool.blockSize;
    seq.heldHashes = pinned;
    seq.privateBlocks = fresh;
    seq.computed = cachedTokens;
    seq.pendingHit = cachedTokens;
    seq.state = "prefill";
    if (seq.generated === 0) {
      this.observer.prefixLookup(req.promptTokens, cachedTokens);
      req.listener.onScheduled?.({ cachedTokens, atMs: this.timers.now() });
    }
    return true;
  }

  /** Registers the prompt's full blocks in the prefix cache once their KV exists. */
  private registerPromptBlocks(seq: Seq): void {
    if (!this.limits.prefixCaching) return;
    const { blockHashes } = seq.req;
    for (let i = seq.heldHashes.length; i < blockHashes.length && seq.privateBlocks > 0; i++) {
      if (!this.pool.register(blockHashes[i]!)) break;
      seq.heldHashes.push(blockHashes[i]!);
      seq.privateBlocks--;
    }
  }

  private complete(step: PlannedStep): void {
    const at = step.endsAt;
    let generated = 0;
    let hit = 0;
    let fresh = 0;
    for (const { seq, chunk } of step.prefill) {
      if (seq.state !== "prefill") continue;
      hit += seq.pendingHit ?? 0;
      seq.pendingHit = undefined;
      fresh += chunk;
      seq.computed += chunk;
      if (seq.computed < seq.prefillTarget) continue;
      this.registerPromptBlocks(seq);
      seq.state = "decode";
      this.emit(seq, at);
      generated++;
    }
    for (const seq of step.decode) {
      if (seq.state !== "decode") continue;
      this.emit(seq, at);
      generated++;
    }
    if (step.prefill.length > 0) this.observer.prefillBatch(hit, fresh);
    if (generated > 0) this.observer.tokensGenerated(generated);
    this.notifyIdle();
  }

  private emit(seq: Seq, at: number): void {
    seq.req.listener.onToken(seq.generated, at);
    seq.generated++;
    if (seq.generated < seq.req.outputTokens) return;
    this.remove(seq);
    seq.state = "done";
    seq.req.listener.onFinish(seq.req.finishReason, at);
  }
}
