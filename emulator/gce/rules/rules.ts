// What a kind's rules are (hooks the emulator's state runs around each write) and what they may use.
// Each kind's rules live in their own module and are registered in one table (rules/index.ts);
// every rule is a promise about Google's Compute API and cites the documentation it keeps.

import type { Ipam } from "../ipam";
import type { Json, JsonObject } from "../json";
import type { RefContext } from "../kinds";
import type { Networks } from "../networks";
import type { ResourceKey, ResourceStore, StoredResource } from "../store";

/** The emulator's state as the rules see it. */
export interface RuleEnv {
  readonly store: ResourceStore;
  readonly networks: Networks;
  readonly ipam: Ipam;
  /** Instances one unmanaged instance group may hold (GceStateOptions.instanceGroupMaxInstances). */
  readonly groupMaxInstances: number;
  /** `projects/P/regions/R/forwardingRules/N` */
  path(key: ResourceKey): string;
  /** The key a self link designates, if it is of a modelled kind. */
  keyOfPath(link: string): ResourceKey | undefined;
  /** IPs allocation must skip: those held by any resource but `except`, and released ones. */
  ipsInUse(except?: ResourceKey): Set<string>;
  /** The IP of the address a self link designates (an IP literal is itself), or undefined. */
  resolveAddress(link: string): string | undefined;
  /** A reference to a resource of a modelled kind must name one that exists (404 otherwise). */
  requireExists(link: Json | undefined): void;
  /** How a bare name or partial path is resolved for a resource at `key` (its project, region, zone). */
  refContext(key: ResourceKey): RefContext;
  /** The resource's self link. */
  selfLink(key: ResourceKey): string;
  /** Self link of a zone or region of a project. */
  scopeLink(project: string, scopeType: "region" | "zone", scope: string): string;
}

/** One kind's rules; a kind without a rule of some sort leaves the hook out. */
export interface KindRules {
  /**
   * Rewrites input shorthands that depend on a sibling input into a standalone form, before
   * anything else looks at the inputs.
   */
  readonly expandShorthands?: (props: JsonObject) => JsonObject;
  /** Refuses references the provider sends verbatim that GCE takes only as URLs. */
  readonly requireUrls?: (props: JsonObject) => void;
  /**
   * A reference inside one input as a self link, for the fields whose reference is not a plain
   * `spec.refs` one; undefined when the field has no such rule.
   */
  readonly normalizeField?: (field: string, value: Json, ctx: RefContext) => Json | undefined;
  /** A normalized input value as compared with the stored one (an address link by its IP). */
  readonly comparable?: (env: RuleEnv, field: string, value: Json) => Json;
  /**
   * The checks (references, IPs, conflicts) and side effects (allocated IPs, GCE's defaults) of a
   * create or an update, on the normalized properties about to be stored; `prev` on an update.
   */
  readonly materialize?: (env: RuleEnv, key: ResourceKey, props: JsonObject, prev: StoredResource | undefined) => void;
  /** Whether `user` uses the resource of this kind at `link`, and so blocks its deletion. */
  readonly usedBy?: (link: string, user: StoredResource) => boolean;
  /** GCE's own consequences of the removal of a resource of this kind. */
  readonly afterRemove?: (env: RuleEnv, gone: StoredResource) => void;
}
