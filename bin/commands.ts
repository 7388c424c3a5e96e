/**
 * The commands of `dccm`: the usage `dccm help` prints and each subcommand's own help, one table
 * for bin/dccm.ts and for docs/reference/cli.md (bin/referenceDocs.ts).
 */
import { CONFIG_KEYS } from "../model";
import { ADOPT_HELP } from "./adoptCommand";
import { DAEMON_HELP } from "./daemonCommand";
import { DEMO_HELP } from "./demoCommand";
import { DRIFT_HELP } from "./driftCommand";
import { GC_HELP } from "./gcCommand";
import { MANIFESTS_HELP } from "./manifestsCommand";
import { DESIRED_HELP, RENDER_HELP } from "./options";
import { PREVIEW_HELP } from "./previewCommand";
import { REFRESH_HELP } from "./refreshCommand";
import { STATUS_HELP } from "./statusCommand";

export const USAGE = `usage:
  dccm demo    [--listen HOST:PORT]                                  the main job with no cluster and no GCP account: apiserver, GCE emulator, daemon (dccm demo --help)
  dccm desired --snapshot FILE [--config FILE] [--<key> VALUE ...]   print the DesiredState JSON
  dccm render  --snapshot FILE [--config FILE] [--<key> VALUE ...]   print every resource the stack program declares
  dccm daemon  [--kubeconfig FILE] [--config FILE] [FLAG ...]        run the controller (its flags: dccm daemon --help)
  dccm gc      --dry-run | --yes | RESOURCE ... [FLAG ...]           list leaked GCE resources, delete proven ones (dccm gc --help)
  dccm adopt   [--dry-run] [--allow-replace] [FLAG ...]              adopt the stock GCE CCM's load balancers and routes (dccm adopt --help)
  dccm manifests --config FILE --image IMAGE [FLAG ...]            print the in-cluster install as YAML (dccm manifests --help)
  dccm preview [--snapshot FILE] [--json] [FLAG ...]                 what the daemon would change: exit 0 none, 2 some, 1 error (dccm preview --help)
  dccm status  [--url URL] [--config FILE] [--json]                  one row per stack, from the daemon or its backend (dccm status --help)
  dccm drift   [--json] [FLAG ...]                                   what differs in GCE from the stacks, changing nothing: exit 0 none, 2 some, 1 error (dccm drift --help)
  dccm refresh NAMESPACE/NAME [--timeout DURATION]                   refresh one Service's stack now, print the daemon's answer (dccm refresh --help)
  dccm help                                                          print this text
  dccm version                                                       print the version (also --version)
one config file (YAML or JSON) serves every command: desired and render ignore the daemon's and node controller's keys
config keys (file or flags): ${CONFIG_KEYS.join(" ")}`;

/** Each subcommand's own usage: printed with its --help and after a usage error of it. */
export const SUBCOMMAND_HELP: Readonly<Record<string, string>> = {
  desired: DESIRED_HELP,
  render: RENDER_HELP,
  daemon: DAEMON_HELP,
  demo: DEMO_HELP,
  gc: GC_HELP,
  adopt: ADOPT_HELP,
  manifests: MANIFESTS_HELP,
  preview: PREVIEW_HELP,
  status: STATUS_HELP,
  refresh: REFRESH_HELP,
  drift: DRIFT_HELP,
};
