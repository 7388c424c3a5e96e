/** The deploy/ program: dccm installed from `dccm-deploy:*` stack config (docs/guides/install.md). */
import * as path from "node:path";
import * as pulumi from "@pulumi/pulumi";
import { readConfigFile } from "../daemon/configFile";
import { DccmDeployment } from "./dccmDeployment";
import { deployArgsFromStackConfig } from "./stackConfig";

/** A stack config value: objects, lists, numbers and booleans arrive as JSON; plain strings as written. */
function configValue(config: pulumi.Config, key: string): unknown {
  const value = config.get(key);
  if (value === undefined) return undefined;
  try {
    return JSON.parse(value) as unknown;
  } catch {
    return value;
  }
}

export function deployProgram(): { namespace: string } {
  const config = new pulumi.Config("dccm-deploy");
  const args = deployArgsFromStackConfig(
    (key) => configValue(config, key),
    (file) => {
      // Relative to the project directory (deploy/), where Pulumi.<stack>.yaml lives.
      const root = pulumi.runtime.getRootDirectory();
      return readConfigFile(
        path.isAbsolute(file) || !path.isAbsolute(root) ? path.resolve(file) : path.resolve(root, file),
      );
    },
  );
  const install = new DccmDeployment("dccm", args);
  return { namespace: install.namespace };
}
