/**
 * The Compute read behind `networking.gke.io/load-balancer-ip-addresses`: one regional address by
 * name, as ingress-gce l4_static_address.go ipAddressFromAnnotation reads it (`GetRegionAddress`);
 * the decision on what GCE answered is model/addressNames.ts resolveAddressNames; AddressNameReader
 * puts the answers into the observation (ObservedCloud.addressNames).
 */
import type { ComputeClient } from "../../gce";
import { resourcePath } from "../../gce/resources";
import type { NamedAddress } from "../../model/addressNames";
import { ANNOTATION_LB_IP_ADDRESSES } from "../../model/annotations";
import { readAddressNames } from "../../model/gkeAnnotations";
import { describeError } from "../../runtime/errors";

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
    resourcePath(where.project, { kind: "addresses", scope: where.region, name }),
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

/** What the reader needs: Compute, where the addresses live, the Service's annotations, and the observation it amends. */
export interface AddressNameReaderDeps {
  compute: Pick<ComputeClient, "getResource">;
  where: { project: string; region: string };
  /** The Service's annotations as the watch cache holds them; undefined when gone. */
  annotations: (namespace: string, name: string) => Readonly<Record<string, unknown>> | undefined;
  /** ObservedCloud.addressNames as last observed. */
  observed: () => Readonly<Record<string, NamedAddress | null>> | undefined;
  /** Puts the answers into the observation (DesiredDriver.amend): the Services naming them are planned again. */
  amend: (addressNames: Readonly<Record<string, NamedAddress | null>>) => void;
}

/**
 * The daemon's adapter between `networking.gke.io/load-balancer-ip-addresses` and the observation:
 * it reads the addresses a Service names before the Service is applied (controllers/service/plan.ts
 * waitForAddressNames), so the model resolves them without I/O.
 */
export class AddressNameReader {
  constructor(private readonly deps: AddressNameReaderDeps) {}

  private names(namespace: string, name: string): string[] {
    const annotations = this.deps.annotations(namespace, name);
    if (annotations === undefined) return [];
    const read = (key: string): string | undefined => {
      const value = annotations[key];
      return typeof value === "string" ? value.trim() : undefined;
    };
    // A malformed value is the model's to refuse (it reads the same annotation); nothing to read here.
    return readAddressNames(read, { add: () => undefined });
  }

  /**
   * The Service names an address not read yet, or one GCE had not (read again: the user may have
   * reserved it since).
   */
  pending(namespace: string, name: string): boolean {
    const observed = this.deps.observed() ?? {};
    return this.names(namespace, name).some((address) => (observed[address] ?? null) === null);
  }

  /** Reads each address the Service names, then amends the observation once. */
  async read(namespace: string, name: string, signal?: AbortSignal): Promise<void> {
    const names = this.names(namespace, name);
    if (names.length === 0) return;
    const answers: Record<string, NamedAddress | null> = {};
    for (const address of names) {
      try {
        answers[address] = (await readRegionalAddress(this.deps.compute, this.deps.where, address, signal)) ?? null;
      } catch (error) {
        throw new Error(
          `Service ${namespace}/${name}: metadata.annotations[${ANNOTATION_LB_IP_ADDRESSES}]: reading address ${address}: ${describeError(error)}`,
          { cause: error },
        );
      }
    }
    this.deps.amend({ ...this.deps.observed(), ...answers });
  }
}
