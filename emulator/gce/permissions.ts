// Per-project permissions of the credential the daemon calls Compute with: a project the test
// marks read-only refuses every mutating call (insert, patch, update, set*, endpoint changes,
// delete) with GCE's 403, as a Shared VPC host project refuses a service project's account that
// lacks compute.securityAdmin (docs/guides/shared-vpc.md). Reads stay allowed.
//
// The refusal, as Google words it (https://cloud.google.com/compute/docs/access/iam#the_permissions,
// "To perform an action on a Compute Engine resource, a principal needs the corresponding
// permission"; the messages seen in the field, e.g. forseti-security/forseti-security#3424
// "Required 'compute.firewalls.create' permission for
// 'projects/va-test-project-256619/global/firewalls/forseti-test-allow-icmp-foobar'", and
// hashicorp/terraform-provider-google#8262's response body
// `{"error":{"code":403,"message":"… Required 'compute.networks.get' permission for
// 'projects/…/global/networks/default'.", "errors":[{"message":…,"domain":"global","reason":"forbidden"}]}}`).
// Terraform's provider, and so Pulumi's, prints it as
// "googleapi: Error 403: Required 'compute.firewalls.create' permission for '…', forbidden"
// (cloudfoundry/bosh-google-cpi-release#118).

import { GceError } from "./errors";
import type { JsonObject } from "./json";
import type { GceKind } from "./kinds";

/** The IAM verbs of Compute's mutating permissions (`compute.<kind>.<verb>`). */
export type PermissionVerb = "create" | "update" | "delete";

/** GCE's 403: its body carries the message and domain in each error, as Google's does. */
export class PermissionDenied extends GceError {
  constructor(kind: GceKind, verb: PermissionVerb, path: string) {
    super(403, `Required 'compute.${kind}.${verb}' permission for '${path}'`, "forbidden");
    this.name = "PermissionDenied";
  }

  override toBody(): JsonObject {
    return {
      error: {
        code: this.status,
        message: this.message,
        errors: [{ message: this.message, domain: "global", reason: this.reason }],
      },
    };
  }
}

/** The projects the daemon's credential may read but not write; every other project is writable. */
export class Permissions {
  private readonly readOnly = new Set<string>();

  /** `writable: false` refuses every mutating call to `project` from now on; `true` allows them again. */
  set(project: string, writable: boolean): void {
    if (project === "") throw new Error("permissions: project must be a non-empty project ID");
    if (writable) this.readOnly.delete(project);
    else this.readOnly.add(project);
  }

  /** The read-only projects, sorted. */
  refused(): string[] {
    return [...this.readOnly].sort();
  }

  /** Throws GCE's 403 when the credential may not `verb` a resource of `kind` in `project` (at `path`). */
  check(kind: GceKind, project: string, verb: PermissionVerb, path: string): void {
    if (this.readOnly.has(project)) throw new PermissionDenied(kind, verb, path);
  }

  clear(): void {
    this.readOnly.clear();
  }
}
