/**
 * GCE's limits on instance groups as backends, in one place (docs/guides/services.md#service-semantics,
 * "Instance groups").
 */

/**
 * VM instances in one unmanaged instance group, as dccm fills them. The Compute Engine
 * documentation states 1,000 VMs as the size limit of a zonal instance group (managed instance
 * groups: "A managed instance group can have up to 1000 VM instances per group",
 * https://cloud.google.com/compute/docs/reference/rest/v1/instanceGroupManagers/insert, and "By
 * default, you can create up to 1,000 VMs in a zonal MIG",
 * https://cloud.google.com/compute/docs/instance-groups/creating-groups-of-managed-instances,
 * Limitations); the unmanaged-group page sends the reader to Cloud Load Balancing's "VMs per
 * instance group" (https://cloud.google.com/load-balancing/docs/quotas). 1,000 is also the stock
 * CCM's cap (kubernetes/cloud-provider-gcp providers/gce/gce_loadbalancer_internal.go
 * maxInstancesPerInstanceGroup), which drops the instances beyond it; dccm opens another group.
 */
export const INSTANCE_GROUP_MAX_INSTANCES = 1000;

/**
 * Backends (instance groups) of one backend service: "Maximum number of instance group backends,
 * GCE_VM_IP_PORT NEG backends, GCE_VM_IP NEG backends, or regional internet NEG backends per
 * backend service: 50. This limit cannot be configured." (Cloud Load Balancing, Quotas and limits,
 * Backends: https://cloud.google.com/load-balancing/docs/quotas). A Service that would need more
 * is rejected (model/desired.ts), never served by a subset of its nodes.
 */
export const BACKEND_SERVICE_MAX_BACKENDS = 50;
