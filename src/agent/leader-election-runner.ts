// The I/O around leader-election.ts: every retry period, read the Lease, decide, write with the
// read resourceVersion (a 409 only means someone wrote first: the next look re-reads). Every request
// is bounded by what is left of the renew deadline, so a hung call cannot keep a stale leader
// leading. The caller starts its work on `onStartedLeading` and must stop writing at once on
// `onStoppedLeading`.
import { ApiException, type CoordinationV1Api, type V1Lease, V1MicroTime } from "@kubernetes/client-node";
import { FIELD_MANAGER } from "./apply.ts";
import { sleepUnlessAborted } from "./abortable.ts";
import { decideElection, type ElectionTimings, type LeaseRecord, type Observation, observe, releasedRecord } from "./leader-election.ts";

export interface LeaderElectionOptions {
  coordination: CoordinationV1Api;
  namespace: string;
  name: string;
  identity: string;
  timings: ElectionTimings;
  /** Monotonic milliseconds for expiry and deadlines. */
  now?: () => number;
  logger: { info(msg: string, data?: object): void; warn(msg: string, data?: object): void };
  onStartedLeading(): void;
  onStoppedLeading(reason: string): void;
}

export interface LeaderElector {
  /** Runs until leadership is lost (after onStoppedLeading) or `stop()`. */
  done: Promise<void>;
  isLeader(): boolean;
  /** Stops trying; a leader gives the Lease up (ReleaseOnCancel) once the caller has stopped its work. */
  stop(options: { release: boolean }): Promise<void>;
}

/** client-node serializes V1MicroTime with six fraction digits; a plain Date would carry three, which kube-apiserver refuses. */
const toLeaseSpec = (record: LeaseRecord): V1Lease["spec"] => ({
  holderIdentity: record.holderIdentity ?? undefined,
  leaseDurationSeconds: record.leaseDurationSeconds ?? undefined,
  leaseTransitions: record.leaseTransitions ?? undefined,
  ...(record.acquireTime && { acquireTime: new V1MicroTime(record.acquireTime) }),
  ...(record.renewTime && { renewTime: new V1MicroTime(record.renewTime) }),
});

/** client-node hands MicroTimes back as strings or Dates: the record keeps strings, compared only for change. */
const fromLease = (lease: V1Lease): LeaseRecord => {
  const time = (value: unknown) => (value instanceof Date ? value.toISOString() : typeof value === "string" ? value : undefined);
  const spec = lease.spec ?? {};
  return {
    holderIdentity: spec.holderIdentity ?? "",
    acquireTime: time(spec.acquireTime),
    renewTime: time(spec.renewTime),
    leaseDurationSeconds: spec.leaseDurationSeconds,
    leaseTransitions: spec.leaseTransitions,
  };
};

const codeOf = (error: unknown) => (error instanceof ApiException ? error.code : undefined);

/** Rejects after `ms` so that a request the server never answers counts as a failed try. */
function within<T>(promise: Promise<T>, ms: number): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const timeout = new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error(`no answer within ${ms} ms`)), Math.max(1, ms))));
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

export function startLeaderElection(options: LeaderElectionOptions): LeaderElector {
  const { coordination, namespace, name, identity, timings, logger } = options;
  const now = options.now ?? (() => performance.now());
  const abort = new AbortController();
  let observation: Observation | undefined;
  let lastRenewedAt: number | undefined;
  let lease: V1Lease | undefined;
  let reportedLeader: string | undefined;

  /** How long the next request may take: what is left of the renew deadline while leading. */
  const budget = () => (lastRenewedAt === undefined ? timings.renewDeadlineMs : timings.renewDeadlineMs - (now() - lastRenewedAt));

  const read = async (): Promise<V1Lease | undefined | "failed"> => {
    try {
      return await within(coordination.readNamespacedLease({ name, namespace }), budget());
    } catch (error) {
      if (codeOf(error) === 404) return undefined;
      logger.warn("the leader election Lease could not be read", { lease: `${namespace}/${name}`, error: (error as Error).message });
      return "failed";
    }
  };

  const write = async (record: LeaseRecord, current: V1Lease | undefined): Promise<V1Lease | undefined> => {
    const body: V1Lease = { apiVersion: "coordination.k8s.io/v1", kind: "Lease", metadata: current ? { ...current.metadata } : { name, namespace }, spec: toLeaseSpec(record) };
    try {
      return await within(
        current
          ? coordination.replaceNamespacedLease({ name, namespace, body, fieldManager: FIELD_MANAGER })
          : coordination.createNamespacedLease({ namespace, body, fieldManager: FIELD_MANAGER }),
        budget(),
      );
    } catch (error) {
      // 409: another candidate wrote between our read and our write; the next look sees its record.
      if (codeOf(error) !== 409) logger.warn("the leader election Lease could not be written", { lease: `${namespace}/${name}`, error: (error as Error).message });
      return undefined;
    }
  };

  const step = async (): Promise<{ retryInMs: number } | { lost: string }> => {
    const read_ = await read();
    if (read_ === "failed") {
      if (lastRenewedAt !== undefined && now() - lastRenewedAt > timings.renewDeadlineMs) return { lost: "the Lease could not be read within the renew deadline" };
      return { retryInMs: timings.retryPeriodMs };
    }
    lease = read_;
    const record = lease ? fromLease(lease) : undefined;
    observation = record ? observe(observation, record, now(), timings) : undefined;
    const decision = decideElection({ identity, record, observation, now: now(), lastRenewedAt, timings, wallNow: Date.now() });
    if (decision.action === "lost") return { lost: decision.reason };
    if (decision.action === "wait") {
      if (reportedLeader !== decision.leader) logger.info("standing by, leader is " + decision.leader, { lease: `${namespace}/${name}`, leader: decision.leader, identity });
      reportedLeader = decision.leader;
      return { retryInMs: decision.retryInMs };
    }
    const written = await write(decision.record, lease);
    if (!written) {
      if (lastRenewedAt !== undefined && now() - lastRenewedAt > timings.renewDeadlineMs) return { lost: "the Lease could not be renewed within the renew deadline" };
      return { retryInMs: timings.retryPeriodMs };
    }
    lease = written;
    observation = observe(observation, fromLease(written), now(), timings);
    const wasLeading = lastRenewedAt !== undefined;
    lastRenewedAt = now();
    if (!wasLeading) {
      reportedLeader = identity;
      logger.info("became leader", {
        lease: `${namespace}/${name}`,
        identity,
        ...(decision.action === "acquire" && decision.previousHolder && { previousHolder: decision.previousHolder }),
        transitions: decision.record.leaseTransitions,
      });
      options.onStartedLeading();
    }
    return { retryInMs: timings.retryPeriodMs };
  };

  const done = (async () => {
    while (!abort.signal.aborted) {
      const outcome = await step();
      if (abort.signal.aborted) return;
      if ("lost" in outcome) {
        lastRenewedAt = undefined;
        logger.warn("leadership lost", { lease: `${namespace}/${name}`, identity, reason: outcome.lost });
        options.onStoppedLeading(outcome.lost);
        return;
      }
      await sleepUnlessAborted(outcome.retryInMs, abort.signal);
    }
  })();

  return {
    done,
    isLeader: () => lastRenewedAt !== undefined,
    async stop({ release }) {
      abort.abort();
      await done;
      if (!release || lastRenewedAt === undefined || !lease) return;
      lastRenewedAt = undefined;
      const released = await write(releasedRecord(fromLease(lease), Date.now()), lease);
      logger.info(released ? "leadership released" : "the Lease could not be released; the standby takes over when it expires", { lease: `${namespace}/${name}`, identity });
    },
  };
}
