/**
 * gce/listing.ts against the GCE emulator's HTTP face: what it lists, and deletes answered the way
 * GCE answers them.
 */
import * as assert from "node:assert/strict";
import { ComputeClient } from "../../../gce";
import { deleteObserved, exists, listObserved } from "../../../gce/listing";
import { startGceEmulator, type GceEmulator } from "../../../emulator/gce";

describe("gce/listing against the emulator", function () {
  let gce: GceEmulator;
  let client: ComputeClient;
  const regional = { project: "dccm-test", region: "us-central1" };

  before(async () => {
    gce = await startGceEmulator();
    client = new ComputeClient({ endpoint: gce.computeEndpoint });
  });
  after(async () => gce?.stop());

  it("lists every collection dccm uses, in the region, its zones and globally, with names and descriptions", async () => {
    gce.state.create("gcp:compute/regionHealthCheck:RegionHealthCheck", {
      ...regional,
      name: "hc",
      description: "d-hc",
      tcpHealthCheck: { port: 80 },
    });
    gce.state.create("gcp:compute/httpHealthCheck:HttpHealthCheck", { project: "dccm-test", name: "legacy" });
    gce.state.create("gcp:compute/instanceGroup:InstanceGroup", {
      project: "dccm-test",
      zone: "us-central1-b",
      name: "k8s-ig--c1",
      description: "d-ig",
    });
    gce.state.create("gcp:compute/address:Address", { ...regional, name: "a1", description: "d-a1" });
    gce.state.create("gcp:compute/forwardingRule:ForwardingRule", {
      ...regional,
      name: "a1",
      ipAddress: "a1",
      portRange: "80",
      description: "d-fr",
    });
    gce.state.create("gcp:compute/firewall:Firewall", {
      project: "dccm-test",
      name: "k8s-fw-a1",
      network: "default",
      allows: [{ protocol: "tcp" }],
      sourceRanges: ["0.0.0.0/0"],
    });
    // Not a region of ours: not listed.
    gce.state.create("gcp:compute/address:Address", { project: "dccm-test", region: "europe-west1", name: "far" });
    const observed = await listObserved(client, { project: "dccm-test" }, "us-central1");
    assert.deepEqual(
      observed.map((r) => `${r.kind}/${r.scope}/${r.name} ${JSON.stringify(r.description)}`),
      [
        'forwardingRules/us-central1/a1 "d-fr"',
        'healthChecks/us-central1/hc "d-hc"',
        'httpHealthChecks/global/legacy ""',
        'addresses/us-central1/a1 "d-a1"',
        'instanceGroups/us-central1-b/k8s-ig--c1 "d-ig"',
        'firewalls/global/k8s-fw-a1 ""',
      ],
    );
  });

  it("deletes users first; what is in use is refused with GCE's message; what is gone is absent", async () => {
    gce.state.create("gcp:compute/targetPool:TargetPool", { ...regional, name: "tp", healthChecks: "legacy" });
    const check = { kind: "httpHealthChecks" as const, scope: "global", name: "legacy", description: "" };
    const pool = { kind: "targetPools" as const, scope: "us-central1", name: "tp", description: "" };
    await assert.rejects(deleteObserved(client, { project: "dccm-test" }, check), {
      message:
        "compute httpHealthChecks.delete projects/dccm-test/global/httpHealthChecks/legacy: HTTP 400: " +
        "The http_health_check resource 'projects/dccm-test/global/httpHealthChecks/legacy' is already being used by 'projects/dccm-test/regions/us-central1/targetPools/tp'",
    });
    assert.equal(await deleteObserved(client, { project: "dccm-test" }, pool), "deleted");
    assert.equal(await deleteObserved(client, { project: "dccm-test" }, check), "deleted");
    assert.equal(await deleteObserved(client, { project: "dccm-test" }, check), "absent");
    assert.equal(await exists(client, { project: "dccm-test" }, check), false);
    // An address its forwarding rule uses is released, as on GCE: the rule keeps the IP, now ephemeral.
    const address = { kind: "addresses" as const, scope: "us-central1", name: "a1", description: "" };
    assert.equal(await deleteObserved(client, { project: "dccm-test" }, address), "deleted");
    assert.equal(
      await exists(
        client,
        { project: "dccm-test" },
        { kind: "forwardingRules", scope: "us-central1", name: "a1", description: "" },
      ),
      true,
    );
    assert.equal(
      await exists(
        client,
        { project: "dccm-test" },
        { kind: "firewalls", scope: "global", name: "k8s-fw-a1", description: "" },
      ),
      true,
    );
    assert.deepEqual(
      Object.entries(gce.calls()).filter(([call]) => call.startsWith("DELETE")),
      [
        ["DELETE /compute/v1/projects/{project}/global/httpHealthChecks/{name}", 3],
        ["DELETE /compute/v1/projects/{project}/regions/{region}/addresses/{name}", 1],
        ["DELETE /compute/v1/projects/{project}/regions/{region}/targetPools/{name}", 1],
      ],
    );
  });

  it("Shared VPC: firewalls and routes are listed, looked up and deleted in the host project, the rest in project", async () => {
    gce.state.reset();
    gce.putNetwork({ name: "default", project: "vpc-host", autoCreateSubnetworks: true });
    gce.state.create("gcp:compute/firewall:Firewall", {
      project: "vpc-host",
      name: "k8s-fw-host",
      network: "default",
      allows: [{ protocol: "tcp" }],
      sourceRanges: ["0.0.0.0/0"],
    });
    gce.state.create("gcp:compute/firewall:Firewall", {
      project: "dccm-test",
      name: "k8s-fw-service",
      network: "default",
      allows: [{ protocol: "tcp" }],
      sourceRanges: ["0.0.0.0/0"],
    });
    gce.state.create("gcp:compute/address:Address", { ...regional, name: "a-service" });
    gce.state.create("gcp:compute/address:Address", { project: "vpc-host", region: "us-central1", name: "a-host" });
    const projects = { project: "dccm-test", networkProject: "vpc-host" };
    const observed = await listObserved(client, projects, "us-central1");
    assert.deepEqual(
      observed.map((r) => `${r.kind}/${r.scope}/${r.name}`),
      ["addresses/us-central1/a-service", "firewalls/global/k8s-fw-host"],
    );
    const hostFirewall = { kind: "firewalls" as const, scope: "global", name: "k8s-fw-host", description: "" };
    assert.equal(await exists(client, projects, hostFirewall), true);
    assert.equal(await exists(client, { project: "dccm-test" }, hostFirewall), false);
    assert.equal(await deleteObserved(client, projects, hostFirewall), "deleted");
    assert.deepEqual(
      gce
        .listResources()
        .filter((r) => r.kind === "firewalls")
        .map((r) => `${r.project}/${r.name}`),
      ["dccm-test/k8s-fw-service"],
    );
  });
});
