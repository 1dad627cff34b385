// The data-parallel group behind one API server: one EngineScheduler per DP rank, each with its own
// KV cache and batch limits; requests go to the rank with the least `waiting × 4 + running` (vLLM's
// internal load balancing) unless pinned. Elastic resizes replace the rank set here.
import type { PerfModel } from "../domain/perf-model.ts";
import { EngineScheduler, realTimers, type EngineRequest, type SchedulerLimits, type SchedulerObserver, type Timers } from "./engine-scheduler.ts";

export interface RankState {
  rank: number;
  running: number;
  waiting: number;
  transferring: number;
  kvUsage: number;
  usedTokens: number;
  capacityTokens: number;
  /** SGLang's gauge: hit / (hit + new) of the latest prefill batch. */
  cacheHitRate: number;
  /** Output tokens per second over the last few seconds. */
  genThroughput: number;
  /** PD queues kept by the HTTP layer (pd.ts): prefill waiting for its decode peer, decode waiting for its prefill. */
  prefillBootstrapQueue: number;
  prefillInflightQueue: number;
  decodePreallocQueue: number;
}

export interface RankCounters {
  prefillBootstrapQueue: number;
  prefillInflightQueue: number;
  decodePreallocQueue: number;
}

const THROUGHPUT_WINDOW_MS = 5000;
/** Tokens are counted in 100 ms buckets, so the window holds at most 51 entries however busy the rank is. */
const BUCKET_MS = 100;

class Rank {
  readonly counters: RankCounters = { prefillBootstrapQueue: 0, prefillInflightQueue: 0, decodePreallocQueue: 0 };
  cacheHitRate = 0;
  /** Generated tokens per 100 ms bucket (`slot` = at ÷ 100 ms), oldest first. */
  private readonly produced: { slot: number; count: number }[] = [];

  constructor(
    readonly index: number,
    readonly scheduler: EngineScheduler,
  ) {}

  recordTokens(at: number, count: number): void {
    const slot = Math.floor(at / BUCKET_MS);
    const last = this.produced[this.produced.length - 1];
    if (last?.slot === slot) last.count += count;
    else this.produced.push({ slot, count });
    const oldest = Math.floor((at - THROUGHPUT_WINDOW_MS) / BUCKET_MS);
    while (this.produced.length > 0 && this.produced[0]!.slot < oldest) this.produced.shift();
  }

  throughput(now: number): number {
    const oldest = Math.floor((now - THROUGHPUT_WINDOW_MS) / BUCKET_MS);
    let tokens = 0;
    for (const bucket of this.produced) if (bucket.slot >= oldest) tokens += bucket.count;
    return tokens / (THROUGHPUT_WINDOW_MS / 1000);
  }
}

export interface EngineEvents {
  prefixLookup(rank: number, queried: number, hit: number): void;
  preempted(rank: number): void;
  prefillBatch(rank: number, hit: number, fresh: number): void;
  tokensGenerated(rank: number, count: number): void;
}

export interface EngineOptions {
  perf: PerfModel;
  limits: SchedulerLimits;
  timeScale: number;
  /** Global DP rank of this server's first rank (vLLM external LB serves one rank, `--data-parallel-rank`). */
  firstRank: number;
  ranks: number;
  /** Metrics hooks, called with the rank's global index. */
  events: EngineEvents;
  timers?: Timers;
}

export class SimEngine {
  private ranks: Rank[] = [];
  private readonly timers: Timers;

  constructor(private readonly options: EngineOptions) {
    this.timers = options.timers ?? realTimers;
    this.ranks = Array.from({ length: options.ranks }, (_, i) => this.createRank(options.firstRank + i));
  }

  get perf(): PerfModel {
    return this.options.perf;
  }

  /** Data-parallel ranks this server serves right now. */
  get size(): number {
    return this.ranks.length;
  }

  get rankIds(): number[] {
    return this.ranks.map((rank) => rank.index);
  }

  get inFlight(): number {
    return this.ranks.reduce((sum, rank) => sum + rank.scheduler.inFlight, 0);
  }

  get running(): number {
    return this.ranks.reduce((sum, rank) => sum + rank.scheduler.numRunning, 0);
  }

  /** Whether `rank` (a global DP rank) is served here. */
  hasRank(rank: number): boolean {
    return this.ranks.some((entry) => entry.index === rank);
  }

  /** vLLM's placement: the minimum of `waiting × 4 + running`, first rank on ties; or the pinned rank. */
  pickRank(pinned?: number): number {
    if (pinned !== undefined) return pinned;
    let best = this.ranks[0]!;
    let bestScore = Number.POSITIVE_INFINITY;
    for (const rank of this.ranks) {
      const s = rank.scheduler;
      const score = (s.numWaiting + s.numTransferring) * 4 + s.numRunning;
      if (score < bestScore) {
        best = rank;
        bestScore = score;
      }
    }
    return best.index;
  }

  fits(promptTokens: number): boolean {
    return this.ranks[0]!.scheduler.fits(promptTokens);
  }

  counters(rank: number): RankCounters {
    return this.rank(rank).counters;
  }

  submit(rank: number, request: EngineRequest): { abort(): void } {
    return this.rank(rank).scheduler.submit(request);
  }

  states(): RankState[] {
    const now = this.timers.now();
    return this.ranks.map((rank) => {
      const s = rank.scheduler;
      return {
        rank: rank.index,
        running: s.numRunning,
        waiting: s.numWaiting,
        transferring: s.numTransferring,
        kvUsage: s.pool.usage,
        usedTokens: s.pool.usedBlocks * s.pool.blockSize,
        capacityTokens: s.pool.totalBlocks * s.pool.blockSize,
        cacheHitRate: rank.cacheHitRate,
        genThroughput: rank.throughput(now),
        ...rank.counters,
      };
    });
  }

  /**
   * Changes the number of ranks to `size`: new ranks start empty; ranks at or above `size` are
   * removed, aborting what they still hold (vLLM shuts leaving ranks down without draining).
   */
  resize(size: number): void {
    const first = this.options.firstRank;
    for (const rank of this.ranks.slice(size)) rank.scheduler.stop();
    const kept = this.ranks.slice(0, size);
    for (let i = kept.length; i < size; i++) kept.push(this.createRank(first + i));
    this.ranks = kept;
  }

  /** Resolves once no rank holds a request. */
  async whenIdle(): Promise<void> {
    while (this.inFlight > 0) await Promise.all(this.ranks.map((rank) => rank.scheduler.whenIdle()));
  }

  abortAll(): void {
    for (const rank of this.ranks) rank.scheduler.abortAll();
  }

  stop(): void {
    for (const rank of this.ranks) rank.scheduler.stop();
  }

  resetPrefixCache(): void {
    for (const rank of this.ranks) rank.scheduler.resetPrefixCache();
  }

  private rank(index: number): Rank {
    const rank = this.ranks.find((entry) => entry.index === index);
    if (!rank) throw new Error(`rank ${index} is not served here`);
    return rank;
  }

  private createRank(index: number): Rank {
    const events = this.options.events;
    let rank: Rank | undefined;
    const observer: SchedulerObserver = {
      prefixLookup: (queried, hit) => events.prefixLookup(index, queried, hit),
      preempted: () => events.preempted(index),
      prefillBatch: (hit, fresh) => {
        if (rank) rank.cacheHitRate = hit + fresh === 0 ? 0 : hit / (hit + fresh);
        events.prefillBatch(index, hit, fresh);
      },
      tokensGenerated: (count) => {
        rank?.recordTokens(this.timers.now(), count);
        events.tokensGenerated(index, count);
      },
    };
    const scheduler = new EngineScheduler(this.options.perf, this.options.limits, this.options.timeScale, observer, this.timers);
    rank = new Rank(index, scheduler);
    return rank;
  }
}
