/**
 * Adoption of existing GCE resources (the stock CCM's, docs/explanation/architecture.md "Adoption"): a stack's
 * program declares exactly what it always declares, and a transformation on its component gives
 * each child whose GCE resource already exists Pulumi's `import` option. Since Pulumi 3.17x (pulumi
 * PR 19339, "import-then-update") the engine reads the resource, takes what it read as the old
 * state and then diffs the program's inputs against it as for any resource: the same program
 * updates in place, replaces or leaves it, and a preview shows which, field by field.
 */
import * as pulumi from "@pulumi/pulumi";
import { gceResourceId } from "../gce/ids";
import type { AddressPin } from "./serviceLoadBalancer";

export interface Adoption {
  /** Pulumi resource IDs (`projects/p/regions/r/forwardingRules/n`, gce/ids.ts) to import. */
  readonly imports: ReadonlySet<string>;
  /**
   * Forwarding rule and firewall GCE IDs → the IP the rule holds, for a preview before the ephemeral
   * IP has been promoted to the static address the program declares (whose IP a preview cannot
   * know): the rule is previewed with the IP it will get from that address, and the firewall towards it.
   */
  readonly previewIps?: ReadonlyMap<string, string>;
  /**
   * Address GCE IDs → the IP the address must hold: a run that repairs (not a change of the
   * Service) reserves a missing address with the IP its forwarding rule still serves, as the
   * adoption's promotion does, instead of a new one; on an existing address holding it the field
   * (Optional and Computed) shows no diff. See docs/explanation/architecture.md "Drift passes".
   */
  readonly addressIps?: ReadonlyMap<string, string>;
  /**
   * Service key → the hold this run has on the IPv4 address of a Service that reserves none at rest
   * (components/serviceLoadBalancer.ts AddressPin; controllers/service/addressPins.ts): not an
   * adoption of something that exists, but carried with the run's other options the same way.
   */
  readonly addressPins?: ReadonlyMap<string, AddressPin>;
}

const FORWARDING_RULE = "gcp:compute/forwardingRule:ForwardingRule";
const ADDRESS = "gcp:compute/address:Address";
const FIREWALL = "gcp:compute/firewall:Firewall";

/** The transformation a component carries so that its children adopt what exists (none when nothing is adopted). */
export function adoptionTransformations(adoption: Adoption | undefined): pulumi.ResourceTransformation[] {
  if (
    adoption === undefined ||
    (adoption.imports.size === 0 && (adoption.previewIps?.size ?? 0) === 0 && (adoption.addressIps?.size ?? 0) === 0)
  )
    return [];
  return [
    (args) => {
      // Only GCE resources have an ID here (gce/ids.ts reads their plain name, project,
      // region and zone); components and providers have none.
      const id = gceResourceId(args.type, args.props);
      if (id === undefined) return undefined;
      const ip = adoption.previewIps?.get(id);
      const pinned = args.type === ADDRESS ? adoption.addressIps?.get(id) : undefined;
      const props =
        ip !== undefined && args.type === FORWARDING_RULE
          ? { ...args.props, ipAddress: ip }
          : ip !== undefined && args.type === FIREWALL
            ? { ...args.props, destinationRanges: [ip] }
            : pinned !== undefined
              ? { ...args.props, address: pinned }
              : args.props;
      const opts = adoption.imports.has(id) ? { ...args.opts, import: id } : args.opts;
      return { props, opts };
    },
  ];
}
