// Leader election on a coordination.k8s.io Lease, with client-go's rules: a lease is free when its holder has
// not renewed it for leaseDuration as observed on *our* clock (no trust in other machines' clocks); the leader
// renews every retry period and gives up leadership when it could not renew within the renew deadline.
import type { V1Lease } from '@kubernetes/client-node';
import type { Logger } from '../../common/logging.ts';
import { isConflict, isNotFound, type Apis } from './k8s.ts';

interface LeaderOptions {
  apis: Apis;
  log: Logger;
  namespace: string;
  name: string;
  identity: string;
  leaseDurationSeconds?: number;
  renewDeadlineMs?: number;
  retryPeriodMs?: number;
  onStartedLeading: () => void | Promise<void>;
  onStoppedLeading: () => void;
}

/** metav1.MicroTime wants exactly six fractional digits. */
function microTime(date: Date): string {
  return date.toISOString().replace(/\.(\d{3})Z$/, '.$1000Z');
}

export class LeaderElector {
  private readonly o: Required<LeaderOptions>;
  private observedRecord = '';
  private observedAt = 0;
  private leading = false;
  private lastRenew = 0;
  private timer?: NodeJS.Timeout;
  private stopped = false;

  constructor(options: LeaderOptions) {
    this.o = { leaseDurationSeconds: 15, renewDeadlineMs: 10_000, retryPeriodMs: 2_000, ...options };
  }

  get isLeader(): boolean {
    return this.leading;
  }

  start(): void {
    void this.tick();
  }

  /** Stops campaigning; a leader releases the lease so another process takes over at once. */
  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    if (!this.leading) return;
    this.leading = false;
    try {
      const lease = await this.o.apis.coordination.readNamespacedLease({ name: this.o.name, namespace: this.o.namespace });
      if (lease.spec?.holderIdentity === this.o.identity) {
        lease.spec = { ...lease.spec, holderIdentity: undefined, leaseDurationSeconds: 1, renewTime: microTime(new Date()) as unknown as Date };
        await this.o.apis.coordination.replaceNamespacedLease({ name: this.o.name, namespace: this.o.namespace, body: lease });
      }
    } catch (err) {
      this.o.log.warn({ err }, 'could not release the leader lease');
    }
  }

  private async tick(): Promise<void> {
    if (this.stopped) return;
    let held = false;
    try {
      held = await this.tryAcquireOrRenew();
    } catch (err) {
      this.o.log.warn({ err }, 'leader election: lease update failed');
    }
    if (this.stopped) return;
    const now = Date.now();
    if (held) {
      this.lastRenew = now;
      if (!this.leading) {
        this.leading = true;
        this.o.log.info({ identity: this.o.identity, lease: `${this.o.namespace}/${this.o.name}` }, 'became leader');
        await this.o.onStartedLeading();
      }
    } else if (this.leading && now - this.lastRenew > this.o.renewDeadlineMs) {
      this.leading = false;
      this.o.log.error({ identity: this.o.identity }, 'lost the leader lease');
      this.o.onStoppedLeading();
      return;
    }
    this.timer = setTimeout(() => void this.tick(), this.o.retryPeriodMs);
  }

  private async tryAcquireOrRenew(): Promise<boolean> {
    const { apis, namespace, name, identity, leaseDurationSeconds } = this.o;
    const nowDate = new Date();
    const now = microTime(nowDate) as unknown as Date;
    let lease: V1Lease;
    try {
      lease = await apis.coordination.readNamespacedLease({ name, namespace });
    } catch (err) {
      if (!isNotFound(err)) throw err;
      try {
        await apis.coordination.createNamespacedLease({
          namespace,
          body: {
            metadata: { name, namespace },
            spec: { holderIdentity: identity, leaseDurationSeconds, acquireTime: now, renewTime: now, leaseTransitions: 0 },
          },
        });
        return true;
      } catch (e) {
        if (isConflict(e)) return false;
        throw e;
      }
    }
    const spec = lease.spec ?? {};
    const record = JSON.stringify([spec.holderIdentity, spec.renewTime, spec.leaseDurationSeconds]);
    if (record !== this.observedRecord) {
      this.observedRecord = record;
      this.observedAt = nowDate.getTime();
    }
    const holder = spec.holderIdentity;
    const duration = (spec.leaseDurationSeconds ?? leaseDurationSeconds) * 1000;
    if (holder && holder !== identity && this.observedAt + duration > nowDate.getTime()) return false;
    const takeover = holder !== identity;
    lease.spec = {
      ...spec,
      holderIdentity: identity,
      leaseDurationSeconds,
      renewTime: now,
      ...(takeover ? { acquireTime: now, leaseTransitions: (spec.leaseTransitions ?? 0) + 1 } : {}),
    };
    // Times read back as Date objects; send every MicroTime in the six-digit form.
    if (lease.spec.acquireTime instanceof Date) lease.spec.acquireTime = microTime(lease.spec.acquireTime) as unknown as Date;
    try {
      await apis.coordination.replaceNamespacedLease({ name, namespace, body: lease });
      return true;
    } catch (err) {
      if (isConflict(err)) return false;
      throw err;
    }
  }
}
