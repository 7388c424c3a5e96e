// The standalone emulator (main.ts).

import * as assert from "node:assert/strict";
import { spawn } from "node:child_process";
import * as path from "node:path";
import * as readline from "node:readline";

import { pluginBinDir } from "../index";
import { toJsonObject } from "../json";
import { getJson } from "./emulatorFixtures";

describe("GCE emulator", function () {
  describe("standalone", function () {
    it("main.js prints { endpoint, computeEndpoint, env } and serves until SIGTERM", async function () {
      this.timeout(30_000);
      const c = spawn(
        process.execPath,
        [path.join(__dirname, "..", "main.js"), "--project", "p1", "--zones", "europe-west1-b"],
        {
          stdio: ["ignore", "pipe", "inherit"],
        },
      );
      const exited = new Promise<number | null>((resolve) => c.once("exit", (code) => resolve(code)));
      const line = await new Promise<string>((resolve, reject) => {
        readline.createInterface({ input: c.stdout }).once("line", resolve);
        c.once("exit", (code) => reject(new Error(`main.js exited with ${String(code)}`)));
      });
      const printed = toJsonObject(JSON.parse(line));
      assert.deepEqual(Object.keys(printed), ["endpoint", "computeEndpoint", "env"]);
      const endpoint = String(printed.endpoint);
      assert.match(endpoint, /^http:\/\/127\.0\.0\.1:\d+$/);
      assert.equal(printed.computeEndpoint, `${endpoint}/compute/v1/`);
      const env = toJsonObject(printed.env);
      assert.equal(env.DCCM_GCE_EMULATOR_URL, endpoint);
      assert.equal(String(env.PATH).split(path.delimiter)[0], pluginBinDir());
      const zone = await getJson(`${endpoint}/compute/v1/projects/p1/zones/europe-west1-b`);
      assert.equal(zone.status, 200);
      c.kill("SIGTERM");
      assert.equal(await exited, 0);
    });
  });
});
