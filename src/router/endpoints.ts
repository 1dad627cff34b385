// The endpoint registry: what the agent last pushed, each endpoint's in-flight count and
// models, and the cached per-(role, model) candidate lists the hot path reads. An endpoint
// keeps its identity and count across pushes while its id and url stay the same.

export const ROLES = ["server", "prefill", "decode", "encode"] as const;
export type Role = (typeof ROLES)[number];
export const ENDPOINT_STATES = ["eligible", "draining"] as const;
export type EndpointState = (typeof ENDPOINT_STATES)[number];

/** SGLang's default `--disaggregation-bootstrap-port`. */
export const DEFAULT_BOOTSTRAP_PORT = 8998;

export interface EndpointConfig {
  id: string;
  url: string;
  role: Role;
  rank?: number | undefined;
  state: EndpointState;
  bootstrapPort?: number | undefined;
  /** Data-parallel engines behind the endpoint (absent = 1); least load divides by it. */
  ranks?: number | undefined;
}

export interface ModelCard {
  id: string;
  [field: string]: unknown;
}

/** An endpoint's model list as read from its /v1/models: null while unknown. */
export interface ModelRead {
  cards: ModelCard[] | null;
  error?: string;
}

export class Endpoint {
  inFlight = 0;
  /** performance.now() until which the endpoint is skipped (it refused or ignored a connection). */
  unreachableUntil = 0;
  models: ModelCard[] | null = null;
  modelsError: string | undefined;
  private modelIds: Set<string> | null = null;
  readonly protocol: "http:" | "https:";
  readonly hostname: string;
  readonly port: number;
  /** URL path prefix (usually empty) put before /v1/…. */
  readonly basePath: string;

  constructor(
    readonly id: string,
    readonly url: string,
    public role: Role,
    public state: EndpointState,
    public rank: number | undefined,
    public bootstrapPort: number | undefined,
    public ranks: number | undefined,
  ) {
    const parsed = new URL(url);
    this.protocol = parsed.protocol === "https:" ? "https:" : "http:";
    this.hostname = parsed.hostname;
    this.port = parsed.port === "" ? (this.protocol === "https:" ? 443 : 80) : Number(parsed.port);
    this.basePath = parsed.pathname.replace(/\/+$/, "");
  }

  /** The host to hand to sockets (IPv6 without brackets). */
  get socketHost(): string {
    return this.hostname.startsWith("[") ? this.hostname.slice(1, -1) : this.hostname;
  }

  setModels(read: ModelRead): void {
    this.models = read.cards;
    this.modelIds = read.cards === null ? null : new Set(read.cards.map((card) => card.id));
    this.modelsError = read.error;
  }

  /** Serves `model`? An endpoint whose list could not be read is assumed to. */
  serves(model: string): boolean {
    return this.modelIds === null || this.modelIds.has(model);
  }
}

/** none: nothing configured; aggregated: server endpoints; disaggregated: prefill/decode (and encode). */
export type Topology = "none" | "aggregated" | "disaggregated";

export class EndpointRegistry {
  holdWhenEmpty = false;
  private endpoints: Endpoint[] = [];
  private readonly byId = new Map<string, Endpoint>();
  private readonly byRole = new Map<Role, Endpoint[]>();
  private readonly candidateCache = new Map<string, Endpoint[]>();
  private union = new Map<string, ModelCard>();
  private uncertain = false;
  private currentTopology: Topology = "none";

  get topology(): Topology {
    return this.currentTopology;
  }

  list(): readonly Endpoint[] {
    return this.endpoints;
  }

  get(id: string): Endpoint | undefined {
    return this.byId.get(id);
  }

  /** Still configured (same object: same id and url)? */
  contains(endpoint: Endpoint): boolean {
    return this.byId.get(endpoint.id) === endpoint;
  }

  ofRole(role: Role): readonly Endpoint[] {
    return this.byRole.get(role) ?? [];
  }

  /** Eligible endpoints of `role` that serve `model`, in configuration order (cached until the next push). */
  candidates(role: Role, model: string): readonly Endpoint[] {
    const key = role + "\u0000" + model;
    let list = this.candidateCache.get(key);
    if (list === undefined) {
      list = this.ofRole(role).filter((endpoint) => endpoint.state === "eligible" && endpoint.serves(model));
      this.candidateCache.set(key, list);
    }
    return list;
  }

  /** The union of every configured endpoint's models (eligible or draining), first card wins. */
  models(): ModelCard[] {
    return [...this.union.values()];
  }

  hasModel(model: string): boolean {
    return this.union.has(model);
  }

  /** Some endpoint's model list is unknown, so an unlisted model may yet be served. */
  get modelsUncertain(): boolean {
    return this.uncertain;
  }

  /** Which of these configurations need their /v1/models read (new, moved, or not yet known). */
  needsModels(configs: readonly EndpointConfig[]): EndpointConfig[] {
    return configs.filter((config) => {
      const existing = this.byId.get(config.id);
      return existing === undefined || existing.url !== config.url || existing.models === null;
    });
  }

  /**
   * Replaces the configuration. `reads` holds fresh model lists by id; an endpoint without
   * one keeps what it had. Returns the ids that left (their policy state is dropped).
   */
  replace(configs: readonly EndpointConfig[], reads: ReadonlyMap<string, ModelRead>, holdWhenEmpty: boolean): string[] {
    const next: Endpoint[] = [];
    for (const config of configs) {
      const existing = this.byId.get(config.id);
      let endpoint: Endpoint;
      if (existing !== undefined && existing.url === config.url) {
        endpoint = existing;
        endpoint.role = config.role;
        endpoint.state = config.state;
        endpoint.rank = config.rank;
        endpoint.bootstrapPort = config.bootstrapPort;
        endpoint.ranks = config.ranks;
      } else {
        endpoint = new Endpoint(config.id, config.url, config.role, config.state, config.rank, config.bootstrapPort, config.ranks);
      }
      const read = reads.get(config.id);
      if (read !== undefined) endpoint.setModels(read);
      next.push(endpoint);
    }
    const kept = new Set(configs.map((config) => config.id));
    const removed = this.endpoints.filter((endpoint) => !kept.has(endpoint.id)).map((endpoint) => endpoint.id);
    this.install(next);
    this.holdWhenEmpty = holdWhenEmpty;
    return removed;
  }

  /** Applies a later model read (background refresh) to the endpoint still configured under `id`. */
  updateModels(endpoint: Endpoint, read: ModelRead): void {
    if (!this.contains(endpoint)) return;
    endpoint.setModels(read);
    this.install(this.endpoints);
  }

  private install(next: Endpoint[]): void {
    this.endpoints = next;
    this.byId.clear();
    this.byRole.clear();
    this.candidateCache.clear();
    this.union = new Map();
    this.uncertain = false;
    for (const endpoint of next) {
      this.byId.set(endpoint.id, endpoint);
      let list = this.byRole.get(endpoint.role);
      if (list === undefined) this.byRole.set(endpoint.role, (list = []));
      list.push(endpoint);
      if (endpoint.models === null) this.uncertain = true;
      for (const card of endpoint.models ?? []) if (!this.union.has(card.id)) this.union.set(card.id, card);
    }
    this.currentTopology =
      next.length === 0 ? "none" : next.some((endpoint) => endpoint.role !== "server") ? "disaggregated" : "aggregated";
  }
}
