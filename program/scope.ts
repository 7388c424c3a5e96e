/**
 * The scope of a run of the stack program from CI (`dccm:scope`): the scopes of components/stack.ts,
 * plus `services:<i>/<n>`, one of n chunks of the Services, each its own CI stack. One engine run
 * of every Service grows in time per resource and in memory with the cluster (docs/guides/ci.md,
 * "Many Services"); n chunks of it stay the size of a chunk.
 */
import * as crypto from "node:crypto";

import { parseScope, type Scope } from "../model";

export type ProgramScope = Scope | { kind: "services"; index: number; count: number };

/** More chunks than this is a typo: a chunk is a stack, and 10,000 Services in chunks of 10 need 1,000. */
export const MAX_CHUNKS = 1000;

const CHUNK = /^services:(\d+)\/(\d+)$/;

export function parseProgramScope(text: string | undefined): ProgramScope {
  const value = (text ?? "").trim();
  if (value.startsWith("services:")) {
    const match = CHUNK.exec(value);
    const index = match === null ? NaN : Number(match[1]);
    const count = match === null ? NaN : Number(match[2]);
    if (!(count >= 1 && count <= MAX_CHUNKS && index < count)) {
      throw new Error(`dccm:scope: "${value}" is not services:<i>/<n> with 0 <= i < n <= ${MAX_CHUNKS}`);
    }
    return { kind: "services", index, count };
  }
  try {
    return parseScope(value);
  } catch (error) {
    throw new Error(`dccm:scope: "${value}" is not all, cluster, service:<namespace>/<name> or services:<i>/<n>`, {
      cause: error,
    });
  }
}

/**
 * The chunk (0 to count - 1) a Service belongs to, from its key alone: a Service added or removed
 * moves no other Service to another chunk, so no other Service's resources move between stacks.
 * (Changing the count does move them: see docs/guides/ci.md.)
 */
export function chunkOf(serviceKey: string, count: number): number {
  return crypto.createHash("sha256").update(serviceKey).digest().readUInt32BE(0) % count;
}

/** Pure: the Service keys of chunk `index` of `count`, in the order given. */
export function chunkServices(keys: readonly string[], index: number, count: number): string[] {
  return keys.filter((key) => chunkOf(key, count) === index);
}
