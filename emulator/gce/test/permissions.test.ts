// Per-project permissions (permissions.ts): a project the daemon's credential may not write refuses
// every mutating call with GCE's 403, through every face; reads and other projects are untouched.
import * as assert from "node:assert/strict";

import { type GceEmulator, startGceEmulator } from "../index";
import { PROJECT, NOW, REGION, ADDRESS, regional, gceError, getJson } from "./emulatorFixtures";

const FIREWALL = "gcp:compute/firewall:Firewall";
const HOST = "host-vpc-1";

describe("GCE emulator permissions (permissions.ts)", function () {
  let gce: GceEmulator;
  const firewallInputs = (project: string) => ({
    project,
    name: "k8s-fw-a1",
    network: `projects/${project}/global/networks/default`,
    allows: [{ protocol: "tcp", ports: ["80"] }],
    sourceRanges: ["0.0.0.0/0"],
  });

  beforeEach(async function () {
    gce = await startGceEmulator({ now: () => new Date(NOW) });
  });
  afterEach(async function () {
    await gce.stop();
  });

  it("POST /emulator/permissions refuses a project's writes with GCE's 403 body; writable:true allows them again", async function () {
    const post = (body: unknown) =>
      getJson(`${gce.endpoint}/emulator/permissions`, { method: "POST", body: JSON.stringify(body) });
    assert.deepEqual(await post({ project: HOST, writable: false }), {
      status: 200,
      body: { readOnlyProjects: [HOST] },
    });
    const refused = await getJson(`${gce.endpoint}/emulator/provider/create`, {
      method: "POST",
      body: JSON.stringify({ type: FIREWALL, inputs: firewallInputs(HOST) }),
    });
    const message = `Required 'compute.firewalls.create' permission for 'projects/${HOST}/global/firewalls/k8s-fw-a1'`;
    assert.deepEqual(refused, {
      status: 403,
      body: { error: { code: 403, message, errors: [{ message, domain: "global", reason: "forbidden" }] } },
    });
    assert.deepEqual(
      gce.listResources().filter((r) => r.kind === "firewalls"),
      [],
    );
    // The service project is not the host project: its writes go through.
    assert.equal(gce.state.create(FIREWALL, firewallInputs(PROJECT)).project, PROJECT);
    assert.deepEqual(await post({ project: HOST, writable: true }), { status: 200, body: { readOnlyProjects: [] } });
    // (An address: the emulator's host project has no network of its own for a firewall here.)
    assert.equal(gce.state.create(ADDRESS, { ...regional, project: HOST, name: "lb-2" }).project, HOST);
  });

  it("refuses update and delete as compute.<kind>.update / .delete; reads still answer", function () {
    const created = gce.state.create(ADDRESS, { ...regional, name: "lb-1" });
    gce.state.setProjectWritable(PROJECT, false);
    const key = { kind: "addresses" as const, project: PROJECT, scope: REGION, name: "lb-1" };
    const path = `projects/${PROJECT}/regions/${REGION}/addresses/lb-1`;
    const update = gceError(() => gce.state.update(key, { ...created.properties, description: "x" }));
    assert.deepEqual(
      [update.status, update.reason, update.message],
      [403, "forbidden", `Required 'compute.addresses.update' permission for '${path}'`],
    );
    const remove = gceError(() => gce.state.delete(key));
    assert.deepEqual(
      [remove.status, remove.reason, remove.message],
      [403, "forbidden", `Required 'compute.addresses.delete' permission for '${path}'`],
    );
    assert.equal(gce.state.get(key).name, "lb-1");
  });

  it("refuses a permission without a project or a boolean writable, naming both fields", async function () {
    const res = await getJson(`${gce.endpoint}/emulator/permissions`, {
      method: "POST",
      body: JSON.stringify({ project: HOST, writable: "no" }),
    });
    assert.equal(res.status, 400);
    assert.deepEqual(res.body, {
      error: {
        code: 400,
        message: "a permission needs project (a project ID) and writable (true or false)",
        errors: [{ reason: "invalid" }],
      },
    });
  });
});
