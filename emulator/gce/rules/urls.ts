// References the provider sends to GCE verbatim must be URLs (full or partial); GCE refuses a bare
// name there. InstanceGroup.network: resource_compute_instance_group.go,
// resourceComputeInstanceGroupCreate (`instanceGroup.Network = v.(string)`); RegionBackendService
// health_checks and backend.group: resource_compute_region_backend_service.go,
// expandComputeRegionBackendServiceHealthChecks / ...BackendGroup (no ParseXFieldValue). Every other
// reference dccm sends goes through an expander that turns a name into a URL (ParseNetworkFieldValue,
// ParseSubnetworkFieldValue, ParseRegionalFieldValue, the target pool's and instance group's instance
// and health check converters), so the emulator accepts names there.

import { GceError } from "../errors";
import { containsUnknown, type Json } from "../json";

/** Refuses a bare name in a field GCE takes only as a URL. */
export function requireUrl(field: string, v: Json | undefined): void {
  if (typeof v === "string" && v !== "" && !containsUnknown(v) && !v.includes("/")) {
    throw new GceError(400, `Invalid value for field 'resource.${field}': '${v}'. The URL is malformed.`, "invalid");
  }
}
