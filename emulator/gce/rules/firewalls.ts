// The rules of firewalls: their network must exist.

import type { KindRules } from "./rules";

export const FIREWALL_RULES: KindRules = {
  materialize(env, _key, props) {
    env.networks.requireNetwork(props.network);
  },
};
