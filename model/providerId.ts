/** A Node's spec.providerID on GCE: `gce://<project>/<zone>/<name>` (the stock GCE CCM's form). */

export interface ProviderID {
  readonly project: string;
  readonly zone: string;
  readonly name: string;
}

const PROVIDER_ID_RE = /^gce:\/\/([^/]+)\/([^/]+)\/([^/]+)$/;

/** `gce://<project>/<zone>/<name>`, or undefined for anything else (unset, other clouds, typos). */
export function parseProviderID(providerID: string | undefined): ProviderID | undefined {
  if (providerID === undefined) return undefined;
  const m = PROVIDER_ID_RE.exec(providerID);
  if (m === null) return undefined;
  return { project: m[1] ?? "", zone: m[2] ?? "", name: m[3] ?? "" };
}

export function formatProviderID(id: ProviderID): string {
  return `gce://${id.project}/${id.zone}/${id.name}`;
}
