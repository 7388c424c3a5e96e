import * as assert from "node:assert/strict";
import { withProgramDefaults } from "../../../program/stackProgram";
import { parseConfig } from "../../../model";

const BASE = {
  project: "my-project",
  region: "us-central1",
  network: "default",
  nodeTags: "k8s-node",
  clusterName: "ci",
  clusterId: "ci0cafe",
};

describe("program/stackProgram: the program's defaults", () => {
  const rows: { name: string; raw: Record<string, unknown>; expected: "always" | undefined }[] = [
    { name: "unset: always (one pulumi up cannot pin an ephemeral IP)", raw: BASE, expected: "always" },
    {
      name: "transient, set explicitly: honoured",
      raw: { ...BASE, addressReservation: "transient" },
      expected: undefined,
    },
    { name: "always, set explicitly: always", raw: { ...BASE, addressReservation: "always" }, expected: "always" },
  ];
  for (const row of rows)
    it(row.name, () => {
      assert.equal(parseConfig(withProgramDefaults(row.raw)).addressReservation, row.expected);
    });

  it("a wrong value is still refused, naming the key", () => {
    assert.throws(
      () => parseConfig(withProgramDefaults({ ...BASE, addressReservation: "sometimes" })),
      (error: Error) =>
        error.message === 'invalid configuration:\n  addressReservation: "sometimes" is not one of transient, always',
    );
  });
});
