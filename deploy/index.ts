// The deploy/ Pulumi program (deploy/Pulumi.yaml): dccm installed in the cluster of the current
// kubeconfig context (or the `kubernetes:*` provider config), from `dccm-deploy:*` stack config.
import * as path from "node:path";
import * as pulumi from "@pulumi/pulumi";
import { readConfigFile } from "../bin/options";
import { DccmDeployment } from "./dccmDeployment";
import { deployArgsFromStackConfig } from "./stackConfig";

const config = new pulumi.Config("dccm-deploy");
const args = deployArgsFromStackConfig(
  (key) => {
    const value = config.get(key);
    if (value === undefined) return undefined;
    // Objects, lists, numbers and booleans arrive as JSON; plain strings as written.
    try {
      return JSON.parse(value) as unknown;
    } catch {
      return value;
    }
  },
  // Relative to the project directory (deploy/), where Pulumi.<stack>.yaml lives.
  (file) => readConfigFile(path.resolve(pulumi.runtime.getRootDirectory(), file)),
);
const install = new DccmDeployment("dccm", args);

export const namespace = install.namespace;
