/** CLI input: a config file (JSON or YAML) with flags of the same names on top. */
import * as fs from "node:fs";
import * as YAML from "yaml";
import { CONFIG_KEYS, ConfigError, parseConfig, type Config, type ConfigKey, type RawConfig } from "../model";
import { NODE_CONFIG_KEYS } from "../nodes/config";

export class UsageError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = "UsageError";
  }
}

export function readConfigFile(path: string): RawConfig {
  let text: string;
  try {
    text = fs.readFileSync(path, "utf8");
  } catch (error) {
    throw new UsageError(`--config ${path}: ${(error as Error).message}`, { cause: error });
  }
  let parsed: unknown;
  try {
    parsed = YAML.parse(text);
  } catch (error) {
    throw new UsageError(`--config ${path}: not JSON or YAML: ${(error as Error).message}`, { cause: error });
  }
  if (parsed === null || parsed === undefined) return {};
  if (typeof parsed !== "object" || Array.isArray(parsed)) throw new UsageError(`--config ${path}: expected a mapping of config keys`);
  return parsed as RawConfig;
}

export function configFromFlags(values: Record<string, string | boolean | undefined>, configPath: string | undefined): RawConfig {
  const raw: RawConfig = configPath !== undefined ? readConfigFile(configPath) : {};
  for (const key of CONFIG_KEYS) {
    const value = values[key];
    if (typeof value === "string") raw[key as ConfigKey] = value;
  }
  return raw;
}

/** Flags for every config key, for node:util parseArgs. */
export const CONFIG_FLAG_OPTIONS: Record<string, { type: "string" }> = Object.fromEntries(CONFIG_KEYS.map((key) => [key, { type: "string" as const }]));

/** Pulumi config values are strings; lists travel as JSON arrays. */
export function toPulumiConfig(raw: RawConfig): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [key, value] of Object.entries(raw)) {
    if (value === undefined || value === null) continue;
    out[key] = typeof value === "string" ? value : JSON.stringify(value);
  }
  return out;
}

/** node:util parseArgs with its errors (unknown flag, missing value) turned into usage errors. */
export function parseFlags<T>(parse: () => T): T {
  try {
    return parse();
  } catch (error) {
    throw new UsageError((error as Error).message, { cause: error });
  }
}

/** Keys of the config file that configure the daemon rather than the GCP picture. */
export const DAEMON_KEYS = ["stateDir", "listen", "parallelism", "driftInterval", "backendUrl", "secretsProvider", "leaderElection", "operationTimeout"] as const;
export type DaemonKey = (typeof DAEMON_KEYS)[number];

/** One config file, sorted by the part of dccm that reads each key. */
export interface SharedConfig {
  /** The GCP picture: what `desired`, `render` and the daemon's model read. */
  model: RawConfig;
  daemon: Partial<Record<DaemonKey, unknown>>;
  node: Record<string, unknown>;
  /** One line per key no part of dccm knows. */
  unknown: string[];
}

/**
 * One file serves every subcommand: each takes its part and ignores the others' keys, but a key
 * that no subcommand reads is a typo and is named.
 */
export function splitConfig(raw: Readonly<Record<string, unknown>>): SharedConfig {
  const shared: SharedConfig = { model: {}, daemon: {}, node: {}, unknown: [] };
  for (const [key, value] of Object.entries(raw)) {
    if ((CONFIG_KEYS as readonly string[]).includes(key)) shared.model[key as ConfigKey] = value;
    else if ((DAEMON_KEYS as readonly string[]).includes(key)) shared.daemon[key as DaemonKey] = value;
    else if ((NODE_CONFIG_KEYS as readonly string[]).includes(key)) shared.node[key] = value;
    else {
      shared.unknown.push(
        `${key}: unknown key (GCP keys: ${CONFIG_KEYS.join(", ")}; daemon keys: ${DAEMON_KEYS.join(", ")}; node controller keys: ${NODE_CONFIG_KEYS.join(", ")})`,
      );
    }
  }
  return shared;
}

/** parseConfig of the model's keys, with the unknown keys reported first in the same error. */
export function parseModelConfig(shared: Pick<SharedConfig, "model" | "unknown">): Config {
  const problems = [...shared.unknown];
  try {
    const config = parseConfig(shared.model);
    if (problems.length === 0) return config;
  } catch (error) {
    if (!(error instanceof ConfigError)) throw error;
    problems.push(...error.problems);
  }
  throw new ConfigError(problems);
}
