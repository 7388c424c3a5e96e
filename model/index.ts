export * from "./types";
export * from "./names";
export * from "./annotations";
export { desiredState } from "./desired";
export { parseConfig, ConfigError, CONFIG_KEYS, type RawConfig, type ConfigKey } from "./config";
export { isBackendNode, isUnmanagedNode, nodeInstance, wantsLoadBalancer } from "./rules";
export { collapsePortRanges } from "./ports";
export { HEALTH_CHECK_SOURCE_RANGES } from "./healthcheck";
export { INSTANCE_GROUP_MAX_INSTANCES, BACKEND_SERVICE_MAX_BACKENDS } from "./limits";
export { assignGroups, backendGroupKeys, observedReferences, type ZoneGroups } from "./groups";
export * from "./stacks";
export { forwardingRuleShape, reservesTransiently } from "./ruleShape";
export { BACKEND_MODES, networkProjectOf } from "./config";
export {
  firewallChanges,
  firewallsPublished,
  gcloudCommand,
  manualChangeMessage,
  terraformSnippet,
  type FirewallChange,
  type PublishedFirewall,
} from "./firewallCommands";
export {
  INTERNAL_BACKEND_VM_LIMIT,
  SUBSET_SIZE_EXTERNAL_CLUSTER,
  SUBSET_SIZE_EXTERNAL_LOCAL,
  SUBSET_SIZE_INTERNAL_CLUSTER,
  SUBSET_SIZE_INTERNAL_LOCAL,
  subsetSize,
} from "./subsets";
export { parseLabelSelector, selectorMatches, type LabelRequirement } from "./labelSelector";
