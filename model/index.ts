export * from "./types";
export * from "./names";
export * from "./annotations";
export { desiredState } from "./desired";
export { parseConfig, ConfigError, CONFIG_KEYS, type RawConfig, type ConfigKey } from "./config";
export { isBackendNode, nodeInstance, wantsLoadBalancer } from "./rules";
export { collapsePortRanges } from "./ports";
export { HEALTH_CHECK_SOURCE_RANGES } from "./healthcheck";
