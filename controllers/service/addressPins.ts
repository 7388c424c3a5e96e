/**
 * A Service that reserves no address at rest (config addressReservation `transient`, the default,
 * as the stock CCM) keeps the ephemeral IP of its forwarding rule. A rule GCE replaces would lose
 * it: an ephemeral IP goes back to Google's pool with its rule. So a run that may replace a rule
 * first pins the rule's current IP — addresses.insert of `<lb>` with that literal, which promotes
 * it, before the engine touches anything — runs holding it, and then releases it with a second
 * run that no longer declares `<lb>`: GCE leaves the IP on the rule as ephemeral. The stock CCM does
 * the same around each replacement (cloud-provider-gcp gce_loadbalancer_external.go
 * ensureExternalLoadBalancer: ensureStaticIP, recreate, "It is safe to release the static IP
 * (which just demotes it to ephemeral) now that it is attached"; gce_loadbalancer_internal.go
 * HoldAddress/ReleaseAddress).
 *
 * Every step is recorded where a restart finds it: the reservation in GCE (a second insert finds it
 * and checks its IP), the pinned run in the stack (whose outputs then name `<lb>`: planServiceSync
 * asks for the release: components/outputs.ts recordedAddress). The decisions are pure (addressStep);
 * AddressPinner is the executor's I/O.
 */
import { isIP } from "node:net";

import { forwardingRuleShape, reservesTransiently, subnetworkUrl, type ServiceDesired } from "../../model";
import type { RecordedAddress } from "../../components/outputs";
import { isRecord } from "../../runtime/guards";
import { regionalResourceId } from "../../gce/ids";
import type { ComputeClient } from "../../gce";

export type AddressStep =
  /** Nothing to hold: the rules keep the IP they have (or get an ephemeral one, the first time). */
  | { kind: "none" }
  /**
   * Reserve `<lb>` on `ip` before the run and run holding it; then, `release`, a second run releases
   * it. Without `release`, the Service now reserves `<lb>` for life (a second protocol shares the IP,
   * or `addressReservation: always`): the rule's ephemeral IP is promoted, never replaced by a new one.
   */
  | { kind: "pin"; ip: string; release: boolean }
  /**
   * The stack holds `<lb>` (a pinned run's, or one reserved for life by an earlier release or mode):
   * a run with the rules on `ip` that no longer declares it, so the engine deletes it last.
   */
  | { kind: "release"; ip?: string };

export interface AddressStepInput {
  service: ServiceDesired;
  recorded: RecordedAddress;
  /** The IPs the Service's status has. */
  published: readonly string[];
  /** The run is a change of the Service (its hash differs from the one applied). */
  change: boolean;
}

/** Pure: the one IPv4 address of the status, if there is exactly one. */
export function publishedIpv4(published: readonly string[]): string | undefined {
  const ipv4 = published.filter((ip) => isIP(ip) === 4);
  return ipv4.length === 1 ? ipv4[0] : undefined;
}

/**
 * Pure: what the next run does with the IPv4 address. A change pins when it may replace a
 * forwarding rule (its shape differs from the one applied, or none was recorded) of a Service that
 * has an IP; a stack holding `<lb>` it should not hold releases it.
 */
export function addressStep(input: AddressStepInput): AddressStep {
  const { service, recorded } = input;
  const ip = publishedIpv4(input.published);
  if (service.reserveAddress === true && service.userIP === undefined && service.ipv6Only !== true)
    return !recorded.holdsAddress && ip !== undefined ? { kind: "pin", ip, release: false } : { kind: "none" };
  if (!reservesTransiently(service)) return { kind: "none" };
  if (recorded.holdsAddress) return ip !== undefined ? { kind: "release", ip } : { kind: "release" };
  if (!input.change || ip === undefined) return { kind: "none" };
  if (recorded.forwardingRuleShape === forwardingRuleShape(service)) return { kind: "none" };
  return { kind: "pin", ip, release: true };
}

/** The GCE resource ID of `<lb>` (gce/ids.ts), as the adoption's imports name it. */
export function addressId(project: string, region: string, service: Pick<ServiceDesired, "lbName">): string {
  return regionalResourceId(project, region, "addresses", service.lbName);
}

/** A pin that cannot be made: the IP is no longer the rule's (its rule was deleted, the IP went back to Google). */
export class AddressPinError extends Error {
  constructor(service: string, message: string, options?: { cause: unknown }) {
    super(`Service ${service}: ${message}`, options);
    this.name = "AddressPinError";
  }
}

/** The Compute calls of a pin. */
export type PinCompute = Pick<ComputeClient, "insertAddress" | "getResource">;

/** Reserves `<lb>` on a rule's IP (addresses.insert), or finds the reservation an earlier try made. */
export class AddressPinner {
  constructor(
    private readonly compute: PinCompute,
    private readonly where: { project: string; region: string },
    private readonly signal?: AbortSignal,
  ) {}

  /**
   * `<lb>` holding `ip`: inserted with that literal (GCE promotes the rule's ephemeral IP), or, when
   * an address of that name exists, checked to hold that very IP. GCE refuses an IP no rule of the
   * project holds any more; that is an AddressPinError, and nothing was reserved.
   */
  async pin(service: ServiceDesired, ip: string): Promise<void> {
    const { project, region } = this.where;
    const opts = this.signal !== undefined ? { signal: this.signal } : {};
    let result: "created" | "exists";
    try {
      result = await this.compute.insertAddress(
        project,
        region,
        {
          name: service.lbName,
          address: ip,
          addressType: service.scheme,
          description: service.description,
          // As components/serviceLoadBalancer.ts declares every internal address: TCP and UDP rules can share it.
          ...(service.scheme === "INTERNAL"
            ? {
                purpose: "SHARED_LOADBALANCER_VIP",
                ...(service.subnetwork !== undefined
                  ? {
                      // A Shared VPC's subnetworks are the host's (components/links.ts sharedSubnetwork).
                      subnetwork: subnetworkUrl(service.networkProject ?? project, region, service.subnetwork),
                    }
                  : {}),
              }
            : { networkTier: service.networkTier }),
        },
        opts,
      );
    } catch (error) {
      throw new AddressPinError(
        service.key,
        `could not reserve ${ip} as address ${service.lbName} before a run that may replace its forwarding rule`,
        { cause: error },
      );
    }
    if (result === "created") return;
    const existing = await this.compute.getResource("addresses.get", addressId(project, region, service), opts);
    const held = isRecord(existing) ? existing.address : undefined;
    if (held !== ip)
      throw new AddressPinError(
        service.key,
        `address ${service.lbName} exists with IP ${String(held)}, not the load balancer's ${ip}`,
      );
  }
}
