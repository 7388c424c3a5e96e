// The HTTP face's routes: path patterns with `{param}` segments, which of them are counted (and
// under which pattern), and the counts.

import { GceError } from "./errors";
import type { Json } from "./json";

export interface RouteContext {
  readonly params: Readonly<Record<string, string>>;
  readonly query: URLSearchParams;
  readonly body: Json | undefined;
}

export interface Reply {
  readonly status: number;
  readonly body: Json;
}

export interface Route {
  readonly method: string;
  /** `/compute/v1/projects/{project}/zones/{zone}/instances/{name}`: what calls are counted under. */
  readonly pattern: string;
  readonly re: RegExp;
  readonly names: readonly string[];
  readonly counted: boolean;
  readonly handle: (ctx: RouteContext) => Reply;
}

function compile(pattern: string): { re: RegExp; names: string[] } {
  const names: string[] = [];
  const source = pattern
    .split("/")
    .map((seg) => {
      const m = /^\{(\w+)\}$/.exec(seg);
      if (m?.[1] !== undefined) {
        names.push(m[1]);
        return "([^/]+)";
      }
      return seg.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
    })
    .join("/");
  return { re: new RegExp(`^${source}$`), names };
}

export function ok(body: Json): Reply {
  return { status: 200, body };
}

export function badRequest(message: string): GceError {
  return new GceError(400, message, "invalid");
}

/** A route parameter the pattern names. */
export function param(ctx: RouteContext, name: string): string {
  const v = ctx.params[name];
  if (v === undefined) {
    throw new Error(`route parameter ${name} missing`);
  }
  return v;
}

export class Router {
  readonly routes: Route[] = [];
  private readonly callCounts = new Map<string, number>();

  route(method: string, pattern: string, counted: boolean, handle: (ctx: RouteContext) => Reply): void {
    const { re, names } = compile(pattern);
    this.routes.push({ method, pattern, re, names, counted, handle });
  }

  /** A counted route whose regex uses `{scope}` but is counted under a pattern naming it region/zone. */
  aliased(method: string, matchPattern: string, countPattern: string, handle: (ctx: RouteContext) => Reply): void {
    const { re, names } = compile(matchPattern);
    this.routes.push({ method, pattern: countPattern, re, names, counted: true, handle });
  }

  count(route: Route): void {
    if (route.counted) {
      const key = `${route.method} ${route.pattern}`;
      this.callCounts.set(key, (this.callCounts.get(key) ?? 0) + 1);
    }
  }

  /** Counted calls, `"GET /compute/v1/projects/{project}/zones/{zone}/instances/{name}": 2`, keys sorted. */
  calls(): Record<string, number> {
    const out: Record<string, number> = {};
    for (const k of [...this.callCounts.keys()].sort()) {
      out[k] = this.callCounts.get(k) ?? 0;
    }
    return out;
  }

  resetCalls(): void {
    this.callCounts.clear();
  }
}
