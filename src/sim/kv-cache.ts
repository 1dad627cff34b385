// The KV-cache block pool of one engine rank, with vLLM-style automatic prefix caching: a full
// prompt block is registered under its chained hash; when no request holds it any more it stays
// cached but evictable, and allocation evicts the least recently freed cached blocks first.
// Invariant: used + evictable + free = total, where `used` counts blocks some request holds.

export class KvBlockPool {
  private used = 0;
  /** Cached blocks some request holds: hash → holders. */
  private readonly held = new Map<string, number>();
  /** Cached blocks nobody holds, oldest first (Map keeps insertion order: the LRU list). */
  private readonly evictable = new Map<string, true>();

  constructor(
    readonly totalBlocks: number,
    readonly blockSize: number,
  ) {}

  get usedBlocks(): number {
    return this.used;
  }

  /** Blocks holding nothing at all. */
  get emptyBlocks(): number {
    return this.totalBlocks - this.used - this.evictable.size;
  }

  /** Blocks an allocation can take: empty ones plus cached ones nobody holds. */
  get availableBlocks(): number {
    return this.totalBlocks - this.used;
  }

  get cachedBlocks(): number {
    return this.held.size + this.evictable.size;
  }

  /** vLLM's `kv_cache_usage_perc`: the share of blocks requests hold (evictable cache counts as free). */
  get usage(): number {
    return this.totalBlocks === 0 ? 0 : this.used / this.totalBlocks;
  }

  blocksFor(tokens: number): number {
    return Math.ceil(tokens / this.blockSize);
  }

  /** How many leading hashes are cached (held or evictable). */
  matchPrefix(hashes: readonly string[]): number {
    let hits = 0;
    for (const hash of hashes) {
      if (!this.held.has(hash) && !this.evictable.has(hash)) break;
      hits++;
    }
    return hits;
  }

  /**
   * Takes the cached blocks `pinned` (which matchPrefix found) plus `fresh` new blocks, evicting
   * least recently used cache entries as needed. All or nothing: false leaves the pool unchanged.
   */
  allocate(pinned: readonly string[], fresh: number): boolean {
    const revived = pinned.filter((hash) => this.evictable.has(hash)).length;
    if (fresh > this.availableBlocks - revived) return false;
    for (const hash of pinned) {
      const holders = this.held.get(hash);
      if (holders !== undefined) {
        this.held.set(hash, holders + 1);
      } else {
        this.evictable.delete(hash);
        this.held.set(hash, 1);
        this.used++;
      }
    }
    let shortfall = fresh - this.emptyBlocks;
    for (const hash of this.evictable.keys()) {
      if (shortfall <= 0) break;
      this.evictable.delete(hash);
      shortfall--;
    }
    this.used += fresh;
    return true;
  }

  /**
   * Turns one block a request already holds into a cached block under `hash`. False when another
   * copy is already cached: the request's block then stays private and is freed plainly.
   */
  register(hash: string): boolean {
    if (this.held.has(hash) || this.evictable.has(hash)) return false;
    this.held.set(hash, 1);
    return true;
  }

  /**
   * Returns a request's blocks: its private ones become empty, its cached ones evictable once
   * nobody holds them. Cached blocks go back tail first, so a prefix's head is evicted last.
   */
  release(cached: readonly string[], privateBlocks: number): void {
    this.used -= privateBlocks;
    for (let i = cached.length - 1; i >= 0; i--) {
      const hash = cached[i]!;
      const holders = this.held.get(hash) ?? 0;
      if (holders > 1) {
        this.held.set(hash, holders - 1);
        continue;
      }
      this.held.delete(hash);
      this.used--;
      this.evictable.set(hash, true);
    }
  }

  /** Drops every evictable cache entry (SGLang `/flush_cache`, vLLM `/reset_prefix_cache`). */
  resetCache(): void {
    this.evictable.clear();
  }
}
