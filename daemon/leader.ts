/**
 * Leader election on a coordination.k8s.io Lease with client-go's timings: a 15 s lease, renewed
 * every 2 s, given up when it could not be renewed for 10 s. Writes carry the resourceVersion, so
 * two replicas never both believe they won.
 *
 * As in client-go, losing is decided by a clock, not by a request's outcome: a timer armed at each
 * successful renew fires at the renew deadline. A renew request on a blackholed connection (no
 * RST) may never fail on its own; each one also carries a deadline so the next attempt can run.
 * The renew deadline is shorter than the lease, so we stop acting before a standby may take over.
 */
import * as k8s from "@kubernetes/client-node";
import { KeepAliveAgents, kubeStatusCode } from "../runtime/kube";
import type { Logger } from "pino";

export interface LeaderOptions {
  namespace: string;
  name: string;
  identity: string;
  leaseDurationMs: number;
  renewDeadlineMs: number;
  retryPeriodMs: number;
  /** Deadline of each Lease request. Default: half the renew deadline. */
  requestTimeoutMs?: number;
  now?: () => number;
}

/** Reads and writes of the Lease a release tries: a renew in flight can make one write stale, not three. */
const RELEASE_ATTEMPTS = 3;

export const DEFAULT_LEASE = {
  namespace: "kube-system",
  name: "dccm",
  leaseDurationMs: 15_000,
  renewDeadlineMs: 10_000,
  retryPeriodMs: 2_000,
};

/** Pure: may `identity` take or keep this lease at `now`? */
export function canAcquire(lease: k8s.V1Lease | undefined, identity: string, now: number): boolean {
  const spec = lease?.spec;
  if (
    spec === undefined ||
    spec.holderIdentity === undefined ||
    spec.holderIdentity === null ||
    spec.holderIdentity === ""
  )
    return true;
  if (spec.holderIdentity === identity) return true;
  const renewed = spec.renewTime !== undefined && spec.renewTime !== null ? new Date(spec.renewTime).getTime() : 0;
  const duration = (spec.leaseDurationSeconds ?? 0) * 1000;
  return renewed + duration < now;
}

export class LeaderElector {
  private readonly agents: KeepAliveAgents;
  private readonly api: k8s.CoordinationV1Api;
  private readonly now: () => number;
  private lastRenew = 0;
  private leading = false;
  private timer: NodeJS.Timeout | undefined;
  private deadlineTimer: NodeJS.Timeout | undefined;
  private stopped = false;
  /** Whether the last acquire-or-renew attempt reached the apiserver and read the Lease. */
  private lastAttemptAnswered = false;

  constructor(
    kubeConfig: k8s.KubeConfig,
    private readonly options: LeaderOptions,
    private readonly logger: Logger,
  ) {
    this.agents = new KeepAliveAgents(kubeConfig, {
      requestTimeoutMs: options.requestTimeoutMs ?? Math.max(1, Math.floor(options.renewDeadlineMs / 2)),
    });
    this.api = this.agents.makeApiClient(k8s.CoordinationV1Api);
    this.now = options.now ?? Date.now;
  }

  isLeader(): boolean {
    return this.leading;
  }

  /**
   * A healthy standby: not leading, still competing, and its last attempt read the Lease (another
   * replica holds it). Such a replica is ready to take over: /readyz says so, or a rolling update
   * would wait forever for a new pod that can only ever stand by.
   */
  isStandingBy(): boolean {
    return !this.leading && !this.stopped && this.lastAttemptAnswered;
  }

  /** One acquire-or-renew attempt. Returns whether we hold the lease afterwards. */
  async tryAcquireOrRenew(): Promise<boolean> {
    const { namespace, name, identity } = this.options;
    const now = this.now();
    const spec = (transitions: number, acquired: boolean, previous?: k8s.V1LeaseSpec): k8s.V1LeaseSpec => ({
      holderIdentity: identity,
      leaseDurationSeconds: Math.ceil(this.options.leaseDurationMs / 1000),
      acquireTime: acquired ? new k8s.V1MicroTime(now) : (previous?.acquireTime ?? new k8s.V1MicroTime(now)),
      renewTime: new k8s.V1MicroTime(now),
      leaseTransitions: transitions,
    });
    let lease: k8s.V1Lease | undefined;
    try {
      lease = await this.api.readNamespacedLease({ name, namespace });
    } catch (error) {
      if (kubeStatusCode(error) !== 404) throw new Error(`reading Lease ${namespace}/${name}`, { cause: error });
    }
    try {
      if (lease === undefined) {
        await this.api.createNamespacedLease({
          namespace,
          body: { metadata: { name, namespace }, spec: spec(0, true) },
        });
      } else {
        if (!canAcquire(lease, identity, now)) return false;
        const takingOver = lease.spec?.holderIdentity !== identity;
        const transitions = (lease.spec?.leaseTransitions ?? 0) + (takingOver ? 1 : 0);
        await this.api.replaceNamespacedLease({
          name,
          namespace,
          body: { metadata: { ...lease.metadata, name, namespace }, spec: spec(transitions, takingOver, lease.spec) },
        });
      }
    } catch (error) {
      // 409: another replica wrote first; it wins this round.
      if (kubeStatusCode(error) === 409) return false;
      throw new Error(`writing Lease ${namespace}/${name}`, { cause: error });
    }
    this.lastRenew = now;
    return true;
  }

  /**
   * Resolves once this replica leads. Afterwards it keeps renewing; if no renew succeeds within
   * the renew deadline it stops renewing and calls `onLost` at once (from a timer, so a request
   * that hangs cannot delay it). An attempt still running then has no effect.
   */
  async acquire(onLost: () => void): Promise<void> {
    await new Promise<void>((resolve) => {
      const attempt = (): void => {
        if (this.stopped) return;
        this.tryAcquireOrRenew()
          .then(
            (held) => {
              this.lastAttemptAnswered = true;
              return held;
            },
            (error: unknown) => {
              this.lastAttemptAnswered = false;
              this.logger.warn({ err: error }, "leader election attempt failed");
              return false;
            },
          )
          .then((held) => {
            if (this.stopped) return;
            if (held) {
              this.armRenewDeadline(onLost);
              if (!this.leading) {
                this.leading = true;
                this.logger.info(
                  { lease: `${this.options.namespace}/${this.options.name}`, identity: this.options.identity },
                  "became leader",
                );
                resolve();
              }
            }
            this.timer = setTimeout(attempt, this.options.retryPeriodMs);
          })
          .catch((error: unknown) => this.logger.error({ err: error }, "leader election loop failed"));
      };
      attempt();
    });
  }

  /** (Re)arms the timer that ends leadership one renew deadline after the last successful renew. */
  private armRenewDeadline(onLost: () => void): void {
    if (this.deadlineTimer !== undefined) clearTimeout(this.deadlineTimer);
    const remaining = Math.max(0, this.lastRenew + this.options.renewDeadlineMs - this.now());
    this.deadlineTimer = setTimeout(() => {
      this.deadlineTimer = undefined;
      if (this.stopped || !this.leading) return;
      // Like client-go, a replica that lost the lease does not try again: it stops, and a
      // restarted process competes afresh.
      this.stopped = true;
      this.leading = false;
      if (this.timer !== undefined) clearTimeout(this.timer);
      this.agents.destroy();
      this.logger.error(
        { lease: `${this.options.namespace}/${this.options.name}`, renewDeadlineMs: this.options.renewDeadlineMs },
        "lost leadership: no renew succeeded within the renew deadline",
      );
      onLost();
    }, remaining);
  }

  /** Stops renewing and, if leading, hands the lease back so another replica takes over at once. */
  async release(): Promise<void> {
    this.stopped = true;
    if (this.timer !== undefined) clearTimeout(this.timer);
    if (this.deadlineTimer !== undefined) clearTimeout(this.deadlineTimer);
    if (!this.leading) {
      this.agents.destroy();
      return;
    }
    this.leading = false;
    const { namespace, name, identity } = this.options;
    try {
      // A renew already sent may land between this read and this write: the write then gets 409
      // (a stale resourceVersion), and the Lease is read again, or the standby would wait out its term.
      for (let attempt = 1; ; attempt++) {
        const lease = await this.api.readNamespacedLease({ name, namespace });
        if (lease.spec?.holderIdentity !== identity) return;
        try {
          await this.api.replaceNamespacedLease({
            name,
            namespace,
            body: {
              metadata: lease.metadata,
              spec: {
                ...lease.spec,
                holderIdentity: "",
                leaseDurationSeconds: 1,
                renewTime: new k8s.V1MicroTime(this.now()),
              },
            },
          });
          return;
        } catch (error) {
          if (kubeStatusCode(error) !== 409 || attempt === RELEASE_ATTEMPTS) throw error;
        }
      }
    } catch (error) {
      this.logger.warn({ err: error }, "could not release the Lease");
    } finally {
      this.agents.destroy();
    }
  }
}
