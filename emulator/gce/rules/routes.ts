// The rules of routes: the next-hop shorthands and references, and the network and instance that
// must exist.

import * as net from "node:net";

import { normalizeRef } from "../kinds";
import type { KindRules } from "./rules";

export const ROUTE_RULES: KindRules = {
  /** A bare `nextHopInstance` name plus `nextHopInstanceZone` becomes `zone/name`. */
  expandShorthands(props) {
    const hop = props.nextHopInstance;
    const zone = props.nextHopInstanceZone;
    if (typeof hop === "string" && typeof zone === "string" && /^[a-z]([-a-z0-9]*[a-z0-9])?$/.test(hop)) {
      return { ...props, nextHopInstance: `${zone}/${hop}` };
    }
    return props;
  },
  normalizeField(field, value, ctx) {
    if (field === "nextHopIlb") {
      if (typeof value !== "string" || net.isIP(value) !== 0) {
        return value;
      }
      return normalizeRef(value, { collection: "forwardingRules", scope: "region" }, ctx);
    }
    if (field === "nextHopInstance") {
      return typeof value === "string" ? normalizeRef(value, { collection: "instances", scope: "zone" }, ctx) : value;
    }
    return undefined;
  },
  materialize(env, _key, props) {
    env.networks.requireNetwork(props.network);
    env.requireExists(props.nextHopInstance);
  },
};
