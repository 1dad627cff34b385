// The bounded prefix tree behind cache_aware routing: which endpoints (tenants) were sent
// which prompt prefixes. Prompts are cut into fixed-size character blocks and each tree
// level is keyed by a 52-bit hash of one block, like an engine's block-granular prefix
// cache; no prompt text is kept, so memory is bounded by the node count alone.
//
// Invariants: a node's tenants are a subset of its parent's (insert adds a tenant along
// the whole path; eviction removes leaves only; removeTenant clears every node), and the
// LRU list keeps every parent ahead of its children, so its tail is always a leaf.

export interface PrefixMatch {
  /** Characters of the prompt shared with the deepest node a wanted tenant holds. */
  matchedChars: number;
  /** The wanted tenants holding that deepest node (in insertion order). */
  tenants: string[];
}

export interface PrefixTreeOptions {
  /** Characters per block (the match granularity). */
  blockChars?: number;
  /** Upper bound on stored characters (nodes × blockChars); least recently used leaves go first. */
  maxChars: number;
  /** Characters of a prompt that are indexed; the rest is ignored. */
  maxIndexedChars?: number;
}

interface TreeNode {
  key: number;
  chars: number;
  parent: TreeNode | null;
  children: Map<number, TreeNode> | null;
  tenants: string[];
  // LRU list links (most recent at the head).
  newer: TreeNode | null;
  older: TreeNode | null;
}

export const DEFAULT_BLOCK_CHARS = 64;
export const DEFAULT_MAX_INDEXED_CHARS = 65_536;

export class PrefixTree {
  readonly blockChars: number;
  readonly maxNodes: number;
  readonly maxIndexedChars: number;
  private readonly root: TreeNode = newNode(0, 0, null);
  private head: TreeNode | null = null;
  private tail: TreeNode | null = null;
  private nodes = 0;

  constructor(options: PrefixTreeOptions) {
    this.blockChars = options.blockChars ?? DEFAULT_BLOCK_CHARS;
    this.maxNodes = Math.max(1, Math.floor(options.maxChars / this.blockChars));
    this.maxIndexedChars = options.maxIndexedChars ?? DEFAULT_MAX_INDEXED_CHARS;
    if (!(this.blockChars >= 1)) throw new RangeError("blockChars must be at least 1");
  }

  /** Number of stored blocks (tree nodes, root excluded). */
  get size(): number {
    return this.nodes;
  }

  /** Indexed length of a prompt: the denominator of a match rate. */
  indexedLength(text: string): number {
    return Math.min(text.length, this.maxIndexedChars);
  }

  /**
   * The longest prefix of `text` that a tenant accepted by `wanted` holds. Read-only:
   * recency changes only on insert, which follows every routing decision.
   */
  match(text: string, wanted: (tenant: string) => boolean): PrefixMatch {
    const end = this.indexedLength(text);
    let node = this.root;
    let position = 0;
    let best: PrefixMatch = { matchedChars: 0, tenants: [] };
    while (position < end && node.children !== null) {
      const stop = Math.min(position + this.blockChars, end);
      const child = node.children.get(hashBlock(text, position, stop));
      if (child === undefined || child.chars !== stop - position) break;
      const holders = child.tenants.filter(wanted);
      if (holders.length === 0) break; // deeper nodes hold a subset of these tenants
      best = { matchedChars: stop, tenants: holders };
      node = child;
      position = stop;
    }
    return best;
  }

  /** Records that `tenant` was sent `text`; then evicts least recently used leaves past the bound. */
  insert(text: string, tenant: string): void {
    const end = this.indexedLength(text);
    const path: TreeNode[] = [];
    let node = this.root;
    for (let position = 0; position < end; ) {
      const stop = Math.min(position + this.blockChars, end);
      const key = hashBlock(text, position, stop);
      let child = node.children?.get(key);
      if (child === undefined || child.chars !== stop - position) {
        child = newNode(key, stop - position, node);
        (node.children ??= new Map()).set(key, child);
        this.nodes++;
      }
      if (!child.tenants.includes(tenant)) child.tenants.push(tenant);
      path.push(child);
      node = child;
      position = stop;
    }
    // Deepest first, so each parent ends up ahead of its children in the LRU list.
    for (let i = path.length - 1; i >= 0; i--) this.touch(path[i]!);
    this.evict();
  }

  /** Forgets a tenant everywhere (an endpoint left the configuration); empty nodes go. */
  removeTenant(tenant: string): void {
    const stack: TreeNode[] = [this.root];
    while (stack.length > 0) {
      const node = stack.pop()!;
      if (node.children === null) continue;
      for (const child of node.children.values()) {
        const index = child.tenants.indexOf(tenant);
        if (index < 0) continue; // the subtree holds a subset: the tenant is not below
        child.tenants.splice(index, 1);
        if (child.tenants.length === 0) this.removeSubtree(child);
        else stack.push(child);
      }
    }
  }

  /** Every tenant that holds at least one node. */
  tenants(): Set<string> {
    const found = new Set<string>();
    for (const child of this.root.children?.values() ?? []) for (const tenant of child.tenants) found.add(tenant);
    return found;
  }

  /** The LRU tail is always a leaf (see the invariants), so this never orphans a subtree. */
  private evict(): void {
    while (this.nodes > this.maxNodes && this.tail !== null) this.removeLeaf(this.tail);
  }

  private touch(node: TreeNode): void {
    if (this.head === node) return;
    this.unlink(node);
    node.older = this.head;
    node.newer = null;
    if (this.head !== null) this.head.newer = node;
    this.head = node;
    if (this.tail === null) this.tail = node;
  }

  private unlink(node: TreeNode): void {
    if (node.newer !== null) node.newer.older = node.older;
    else if (this.head === node) this.head = node.older;
    if (node.older !== null) node.older.newer = node.newer;
    else if (this.tail === node) this.tail = node.newer;
    node.newer = null;
    node.older = null;
  }

  private removeLeaf(node: TreeNode): void {
    this.unlink(node);
    const parent = node.parent!;
    parent.children!.delete(node.key);
    if (parent.children!.size === 0) parent.children = null;
    this.nodes--;
  }

  private removeSubtree(top: TreeNode): void {
    const stack = [top];
    while (stack.length > 0) {
      const node = stack.pop()!;
      if (node.children !== null) for (const child of node.children.values()) stack.push(child);
      this.unlink(node);
      this.nodes--;
    }
    const parent = top.parent!;
    parent.children!.delete(top.key);
    if (parent.children!.size === 0) parent.children = null;
  }
}

function newNode(key: number, chars: number, parent: TreeNode | null): TreeNode {
  return { key, chars, parent, children: null, tenants: [], newer: null, older: null };
}

/**
 * 52-bit hash of text[start, stop): two FNV-1a variants (different offset bases) over the
 * UTF-16 code units, 32 + 20 bits. A collision only misroutes a request, never corrupts it.
 */
export function hashBlock(text: string, start: number, stop: number): number {
  let a = 0x811c9dc5;
  let b = 0x01000193 ^ (stop - start);
  for (let i = start; i < stop; i++) {
    const code = text.charCodeAt(i);
    a = Math.imul(a ^ code, 0x01000193);
    b = Math.imul(b ^ code, 0x5bd1e995);
    b ^= b >>> 15;
  }
  return (a >>> 0) * 0x100000 + ((b >>> 0) & 0xfffff);
}
