/**
 * The config file every dccm command reads (`--config FILE`, JSON or YAML), and the error of a
 * command invoked wrongly. Here, below bin/ and deploy/, because both read the same file: the CLI
 * with `--config`, the install program from its stack config's `configFile`.
 */
import * as fs from "node:fs";
import * as YAML from "yaml";
import type { RawConfig } from "../model";

/** A command invoked wrongly (a flag, a value, the config file): the CLI prints it with the usage. */
export class UsageError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = "UsageError";
  }
}

/** The config file's mapping; {} when it is empty; a UsageError naming `--config <path>` otherwise. */
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
  if (typeof parsed !== "object" || Array.isArray(parsed))
    throw new UsageError(`--config ${path}: expected a mapping of config keys`);
  return parsed;
}
