/**
 * The Compute read behind `networking.gke.io/load-balancer-ip-addresses`: one regional address by
 * name, as ingress-gce l4_static_address.go ipAddressFromAnnotation reads it (`GetRegionAddress`);
 * the decision on what GCE answered is model/addressNames.ts resolveAddressNames.
 */
import type { ComputeClient } from "../../gce";
import type { NamedAddress } from "../../model/addressNames";

function text(value: unknown): string | undefined {
  return typeof value === "string" ? value : undefined;
}

/** One regional address by name (addresses.get); undefined when the region has none of that name. */
export async function readRegionalAddress(
  compute: Pick<ComputeClient, "getResource">,
  where: { project: string; region: string },
  name: string,
  signal?: AbortSignal,
): Promise<NamedAddress | undefined> {
  const body = await compute.getResource(
    "addresses.get",
    `projects/${where.project}/regions/${where.region}/addresses/${name}`,
    signal !== undefined ? { signal } : {},
  );
  if (typeof body !== "object" || body === null) return undefined;
  const fields = body as Record<string, unknown>;
  const address = text(fields.address);
  if (address === undefined) return undefined;
  const optional = (key: "addressType" | "ipVersion" | "purpose"): Partial<NamedAddress> => {
    const value = text(fields[key]);
    return value !== undefined ? { [key]: value } : {};
  };
  return { name, address, ...optional("addressType"), ...optional("ipVersion"), ...optional("purpose") };
}
