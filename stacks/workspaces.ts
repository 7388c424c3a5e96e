/**
 * Where the Automation API's workspaces live and how each is set up: one directory per stack (plus
 * the readers' own), all pointed at the same backend and project with the same CLI, so a workspace
 * of the runner, of a reader and of the preview run the CLI alike.
 */
import * as fs from "node:fs";
import { PulumiCommand, type LocalWorkspaceOptions } from "@pulumi/pulumi/automation";
import { ownSubchannelsForRuns } from "./grpcChannels";
import { closeClientsOnDisconnect } from "./runStore";

/** The CLI a runner is given (daemon/options.ts), named here: stacks/ alone imports the Automation API. */
export type { PulumiCommand };

/** The workspace of a StackReader's CLI reads (listing and exporting stacks), beside the stacks' own. */
export const LIST_WORKSPACE = "_list";

/**
 * Pure: the entries of the workspaces folder to remove at start: the directories (never a file or
 * a symbolic link) named for no stack of the backend, the readers' own excepted.
 */
export function strayWorkspaces(
  entries: readonly { name: string; directory: boolean }[],
  stacks: ReadonlySet<string>,
): string[] {
  return entries
    .filter((entry) => entry.directory && entry.name !== LIST_WORKSPACE && !stacks.has(entry.name))
    .map((entry) => entry.name)
    .sort();
}

export interface WorkspaceSettings {
  /** PULUMI_BACKEND_URL of every CLI run. */
  backendUrl: string;
  projectName: string;
  /** Extra environment for the pulumi CLI. */
  env?: Record<string, string>;
  /** e.g. `passphrase` (PULUMI_CONFIG_PASSPHRASE) or `gcpkms://…`. */
  secretsProvider?: string;
  /** The pulumi CLI; without it each workspace runs its own `pulumi version` to find one. */
  pulumiCommand?: PulumiCommand;
}

/**
 * The options of a workspace in `workDir` (created, the owner's only: it holds stack settings with
 * salts). Every workspace's inline runs go through here, so this is where their gRPC clients are
 * given subchannels of their own (stacks/grpcChannels.ts), and closed when their run ends,
 * failed or not (stacks/runStore.ts).
 */
export function workspaceOptions(workDir: string, settings: WorkspaceSettings): LocalWorkspaceOptions {
  ownSubchannelsForRuns();
  closeClientsOnDisconnect();
  fs.mkdirSync(workDir, { recursive: true, mode: 0o700 });
  return {
    workDir,
    projectSettings: { name: settings.projectName, runtime: "nodejs", backend: { url: settings.backendUrl } },
    envVars: { PULUMI_BACKEND_URL: settings.backendUrl, PULUMI_SKIP_UPDATE_CHECK: "true", ...settings.env },
    ...(settings.secretsProvider !== undefined ? { secretsProvider: settings.secretsProvider } : {}),
    ...(settings.pulumiCommand !== undefined ? { pulumiCommand: settings.pulumiCommand } : {}),
  };
}

/**
 * The pulumi CLI on PATH, checked once (never rejects): undefined when it cannot be run, so the
 * workspaces fail with the Automation API's own error.
 */
export function pulumiOnPath(): Promise<PulumiCommand | undefined> {
  return PulumiCommand.get().catch(() => undefined);
}
