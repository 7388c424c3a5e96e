/**
 * The deploy/ program's stack config (`dccm-deploy:*`) as DeployArgs. Pure: the caller reads the
 * config and the dccm config file.
 */
import type { BackendArgs, DeployArgs, SecretsArgs } from "./manifests";

/** Keys of `dccm-deploy:` the program reads. */
export type StackConfigKey =
  | "image"
  | "namespace"
  | "replicas"
  | "configFile"
  | "config"
  | "backend"
  | "secrets"
  | "gcpCredentialsSecret"
  | "resources"
  | "nodeController"
  | "imagePullPolicy"
  | "nodeSelector"
  | "tolerations"
  | "logLevel";

/**
 * A dccm config file's keys, with the two a Deployment takes as `backend` and `secrets` set apart
 * (the same file serves `dccm manifests --config` and a local `dccm daemon --config`).
 */
export function splitInstallConfig(file: Record<string, unknown>): {
  config: Record<string, unknown>;
  backendUrl: string | undefined;
  secretsProvider: string | undefined;
} {
  const { backendUrl, secretsProvider, ...config } = file;
  const text = (value: unknown): string | undefined => (typeof value === "string" && value !== "" ? value : undefined);
  return { config, backendUrl: text(backendUrl), secretsProvider: text(secretsProvider) };
}

/**
 * `read(key)`: the stack config value (objects already parsed); `readConfigFile(path)`: the dccm
 * config file named by `configFile`. `config` (an object) and `configFile` are exclusive. Values
 * are passed on as given: deployObjects names whatever is wrong.
 */
export function deployArgsFromStackConfig(
  read: (key: StackConfigKey) => unknown,
  readConfigFile: (path: string) => Record<string, unknown>,
): DeployArgs {
  const configFile = read("configFile");
  const inline = read("config");
  if (configFile !== undefined && inline !== undefined)
    throw new Error("dccm-deploy:configFile and dccm-deploy:config: give one");
  const file =
    typeof configFile === "string" ? readConfigFile(configFile) : ((inline ?? {}) as Record<string, unknown>);
  const { config, backendUrl, secretsProvider } = splitInstallConfig(file);
  const given = read("backend");
  // `pulumi config set dccm-deploy:backend gs://…` stores a plain string: the URL.
  const backend = (
    typeof given === "string" ? { url: given } : (given ?? (backendUrl !== undefined ? { url: backendUrl } : undefined))
  ) as BackendArgs;
  const secrets = (read("secrets") ??
    (secretsProvider !== undefined ? { provider: secretsProvider } : undefined)) as SecretsArgs;
  const optional: Partial<DeployArgs> = {};
  for (const key of [
    "namespace",
    "replicas",
    "gcpCredentialsSecret",
    "resources",
    "nodeController",
    "imagePullPolicy",
    "nodeSelector",
    "tolerations",
    "logLevel",
  ] as const) {
    const value = read(key);
    if (value !== undefined) Object.assign(optional, { [key]: value });
  }
  return { image: (read("image") ?? "") as string, config, backend, secrets, ...optional };
}
