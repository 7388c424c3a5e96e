/** CLI input: a config file (JSON or YAML) with flags of the same names on top. */
import * as fs from "node:fs";
import * as YAML from "yaml";
import { collectModelConfig, withConfigFlags, type SharedConfig } from "../daemon/config";
import { CONFIG_KEYS, ConfigError, type Config, type ConfigKey, type RawConfig } from "../model";

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
  return parsed;
}

export function configFromFlags(values: Record<string, string | boolean | undefined>, configPath: string | undefined): RawConfig {
  return withConfigFlags(configPath !== undefined ? readConfigFile(configPath) : {}, values);
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

/** parseConfig of the model's keys, with the unknown keys reported first in the same error. */
export function parseModelConfig(shared: Pick<SharedConfig, "model" | "unknown">): Config {
  const problems = [...shared.unknown];
  const config = collectModelConfig(shared.model, problems);
  if (config !== undefined && problems.length === 0) return config;
  throw new ConfigError(problems);
}

const SNAPSHOT_FLAGS = [
  "  --snapshot FILE                      the cluster as `kubectl get nodes,services -A -o json` prints it (required)",
  "  --config FILE                        the dccm config file (only its GCP keys are read)",
  "  --<key> VALUE                        a GCP key, winning over the file's (dccm daemon --help lists them)",
  "  -h, --help                           print this help",
];

export const DESIRED_HELP = [
  "usage: dccm desired --snapshot FILE [--config FILE] [--<key> VALUE ...]",
  "prints the desired state (JSON) of the cluster in FILE; rejected Services on stderr.",
  ...SNAPSHOT_FLAGS,
].join("\n");

export const RENDER_HELP = [
  "usage: dccm render --snapshot FILE [--config FILE] [--<key> VALUE ...]",
  "prints every resource the stack program declares for the cluster in FILE (under Pulumi's mocks: no cloud call).",
  ...SNAPSHOT_FLAGS,
].join("\n");
