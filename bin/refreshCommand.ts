/**
 * `dccm refresh NAMESPACE/NAME`: asks the daemon to refresh one Service's stack now (annotation
 * dccm.io/refresh-requested, a new value per request: controllers/service/refreshRequest.ts), then
 * waits for the Event that answers that value and prints it. The daemon does the refresh; this
 * command only writes the annotation and reads Events.
 */
import * as k8s from "@kubernetes/client-node";
import { setTimeout as sleep } from "node:timers/promises";
import { ANNOTATION_REFRESH_REQUESTED } from "../model";
import { REFRESHED, REFRESH_FAILED } from "../controllers/service/refreshRequest";
import { kubeStatusCode } from "../runtime/kube";
import { describeError } from "../runtime/errors";
import { formatDuration, parseDuration } from "../runtime/durations";
import {
  commandHelp,
  kubeConfigOf,
  parseCommand,
  READER_FLAGS,
  stringFlag,
  UsageError,
  type HelpEntry,
} from "./options";

export const DEFAULT_REFRESH_TIMEOUT_MS = 5 * 60_000;
/** How often the Service's Events are read while waiting. */
const POLL_MS = 1000;

const REFRESH_FLAGS: readonly HelpEntry[] = [
  READER_FLAGS.kubeconfig,
  {
    name: "timeout",
    value: "DURATION",
    help: `how long to wait for the daemon's answer (default ${formatDuration(DEFAULT_REFRESH_TIMEOUT_MS)})`,
  },
  { name: "no-wait", help: "ask and return at once (the answer is an Event on the Service)" },
];

export const REFRESH_HELP = commandHelp(
  [
    "usage: dccm refresh NAMESPACE/NAME [--kubeconfig FILE] [--timeout DURATION] [--no-wait]",
    `asks the daemon to refresh the Service's stack now, as a drift pass does (annotation ${ANNOTATION_REFRESH_REQUESTED}),`,
    `and prints the daemon's answer (an Event ${REFRESHED} or ${REFRESH_FAILED} on the Service).`,
  ],
  REFRESH_FLAGS,
  [
    `exit 0: refreshed (no drift, or drift repaired); 1: ${REFRESH_FAILED}, no answer within the timeout, or no such LoadBalancer Service; 2: usage.`,
  ],
);

/** Pure: `NAMESPACE/NAME` of the command line. */
export function refreshTarget(positionals: readonly string[]): { namespace: string; name: string } {
  if (positionals.length !== 1)
    throw new UsageError(
      `expected one Service as NAMESPACE/NAME, got ${positionals.length === 0 ? "none" : positionals.join(" ")}`,
    );
  const match = /^([a-z0-9][-a-z0-9]*)\/([a-z0-9][-a-z0-9]*)$/.exec(positionals[0] ?? "");
  if (match === null) throw new UsageError(`expected NAMESPACE/NAME, got "${positionals[0] ?? ""}"`);
  return { namespace: match[1] ?? "", name: match[2] ?? "" };
}

/** Pure: why the Service cannot be refreshed by dccm; undefined when it can. */
export function refreshRefusal(service: Pick<k8s.V1Service, "spec" | "metadata">): string | undefined {
  const where = `Service ${service.metadata?.namespace ?? ""}/${service.metadata?.name ?? ""}`;
  const type = service.spec?.type ?? "ClusterIP";
  if (type !== "LoadBalancer")
    return `${where} is of type ${type}, not LoadBalancer: dccm has no load balancer to refresh`;
  if (service.metadata?.deletionTimestamp !== undefined && service.metadata.deletionTimestamp !== null)
    return `${where} is being deleted`;
  return undefined;
}

/** Pure: the daemon's answer to `value` among the Service's Events; undefined when not there yet. */
export function refreshAnswerOf(
  events: readonly k8s.CoreV1Event[],
  uid: string,
  value: string,
): { type: string; reason: string; message: string } | undefined {
  const prefix = `Refresh ${value}:`;
  for (const event of events) {
    const reason = event.reason ?? "";
    if (event.involvedObject.uid !== uid || (reason !== REFRESHED && reason !== REFRESH_FAILED)) continue;
    if (event.message?.startsWith(prefix) === true) return { type: event.type ?? "", reason, message: event.message };
  }
  return undefined;
}

export async function runRefresh(argv: string[]): Promise<number> {
  const { values, positionals } = parseCommand(argv, REFRESH_FLAGS, { positionals: true });
  if (values.help === true) {
    process.stdout.write(`${REFRESH_HELP}\n`);
    return 0;
  }
  const { namespace, name } = refreshTarget(positionals);
  const timeoutText = stringFlag(values, "timeout");
  const timeoutMs = timeoutText === undefined ? DEFAULT_REFRESH_TIMEOUT_MS : parseDuration(timeoutText);
  if (timeoutMs === undefined || timeoutMs <= 0)
    throw new UsageError(`--timeout ${timeoutText ?? ""}: expected a duration such as 30s or 5m`);
  const core = kubeConfigOf(stringFlag(values, "kubeconfig")).makeApiClient(k8s.CoreV1Api);

  let service: k8s.V1Service;
  try {
    service = await core.readNamespacedService({ namespace, name });
  } catch (error) {
    if (kubeStatusCode(error) === 404) return fail(`Service ${namespace}/${name} not found`);
    return fail(`reading Service ${namespace}/${name}: ${describeError(error)}`);
  }
  const refusal = refreshRefusal(service);
  if (refusal !== undefined) return fail(refusal);
  const uid = service.metadata?.uid ?? "";

  // A new value per request: the daemon answers each value once.
  const value = new Date().toISOString();
  try {
    await core.patchNamespacedService(
      { namespace, name, body: { metadata: { uid, annotations: { [ANNOTATION_REFRESH_REQUESTED]: value } } } },
      k8s.setHeaderOptions("Content-Type", k8s.PatchStrategy.MergePatch),
    );
  } catch (error) {
    return fail(
      `setting annotation ${ANNOTATION_REFRESH_REQUESTED} on Service ${namespace}/${name}: ${describeError(error)}`,
    );
  }
  process.stdout.write(`asked: ${ANNOTATION_REFRESH_REQUESTED}=${value} on Service ${namespace}/${name}\n`);
  if (values["no-wait"] === true) return 0;

  const deadline = Date.now() + timeoutMs;
  for (;;) {
    let answer: ReturnType<typeof refreshAnswerOf>;
    try {
      const events = await core.listNamespacedEvent({ namespace, fieldSelector: `involvedObject.uid=${uid}` });
      answer = refreshAnswerOf(events.items, uid, value);
    } catch (error) {
      return fail(`reading the Events of Service ${namespace}/${name}: ${describeError(error)}`);
    }
    if (answer !== undefined) {
      process.stdout.write(`${answer.type} ${answer.reason}: ${answer.message}\n`);
      return answer.reason === REFRESHED ? 0 : 1;
    }
    if (Date.now() >= deadline) break;
    await sleep(Math.min(POLL_MS, Math.max(0, deadline - Date.now())));
  }
  return fail(
    `no answer from a dccm daemon within ${formatDuration(timeoutMs)}: is one running and leading for this cluster (dccm status)? ` +
      `The request stays on the Service; the daemon answers it when it next syncs the Service (kubectl describe service -n ${namespace} ${name})`,
  );
}

function fail(message: string): number {
  process.stderr.write(`dccm refresh: ${message}\n`);
  return 1;
}
