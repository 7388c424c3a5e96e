/**
 * Where the stacks live: the engine's knowledge of backends. One rule for every command and the
 * daemon, so that `dccm preview`, `status`, `gc` and `adopt` read the backend the daemon writes.
 */
import * as path from "node:path";

/** A directory as a file:// backend URL; absolute, since the pulumi CLI runs in each stack's own workspace. */
export function localBackendUrl(dir: string): string {
  return `file://${path.resolve(dir)}`;
}

/** Each source of the backend URL, highest first; undefined or "" is unset. */
export interface BackendSources {
  /** `--backend-url`. */
  readonly flag?: string;
  /** The config file's `backendUrl`. */
  readonly file?: string;
  /** `$PULUMI_BACKEND_URL`. */
  readonly env?: string;
  /** The state directory, already resolved: its `backend` folder is the default. */
  readonly stateDir: string;
}

/**
 * The backend URL: the flag, then the config file's key, then $PULUMI_BACKEND_URL, then
 * file://<stateDir>/backend. An empty value is unset, wherever it comes from: `PULUMI_BACKEND_URL=`
 * in a shell or a Deployment, or `backendUrl: ""` in a template, means "not set here", and passing ""
 * on would leave the choice to the pulumi CLI's own login (Pulumi Cloud), not to the next source.
 */
export function resolveBackendUrl(sources: BackendSources): string {
  for (const value of [sources.flag, sources.file, sources.env]) if (value !== undefined && value !== "") return value;
  return localBackendUrl(path.join(sources.stateDir, "backend"));
}
