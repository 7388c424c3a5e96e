/** Errors as people read them: in Events, logs and the reconcile results of every controller. */
import { kubeErrorText } from "./kube";

/** The message chain of an error, short enough for an Event. */
export function describeError(error: unknown, limit = 1024): string {
  const parts: string[] = [];
  let current: unknown = error;
  for (let depth = 0; current !== undefined && current !== null && depth < 6; depth++) {
    const apiText = kubeErrorText(current);
    if (apiText !== undefined) {
      // An apiserver error's message is its raw response: keep the status and the API's own message.
      parts.push(apiText);
      break;
    }
    if (current instanceof Error) {
      const lines = current.message.split("\n").map((line) => line.trim());
      // Pulumi CLI errors carry the whole output: keep the lines that say what failed.
      const useful = lines.filter((line) => /error|failed|denied|not found|invalid/i.test(line));
      parts.push((useful.length > 0 ? useful.slice(0, 6) : lines.slice(0, 2)).join(" "));
      current = current.cause;
    } else {
      // eslint-disable-next-line @typescript-eslint/no-base-to-string -- a thrown non-Error is printed as it converts
      parts.push(String(current));
      break;
    }
  }
  // A cause whose text its wrapper already quotes (a client error carrying its cause's message) is said once.
  const said = parts.filter(
    (part, index) => part !== "" && !parts.slice(0, index).some((earlier) => earlier.includes(part)),
  );
  const text = said.join(": ");
  return text.length > limit ? `${text.slice(0, limit - 1)}…` : text;
}

/**
 * A failed pulumi CLI run reads, through describeError, as what the daemon said, the CLI's command
 * line, then every progress line that says "error". Split into what the daemon said (`pulumi up of
 * stack … failed`) and the engine's first error (`Error creating ForwardingRule: googleapi: Error
 * 400: …`, GCE's reason); undefined for any other message, or a CLI failure that names no error.
 */
export function pulumiFailure(message: string): { readonly said: string; readonly engineError: string } | undefined {
  const cli = /^(.*?)(?::\s*stderr:)?:?\s*Command failed with exit code \d+: pulumi /s.exec(message);
  if (cli === null) return undefined;
  const engine = /\berror: (.+?)(?=\s+\+\s|\s+error:|$)/s.exec(message.slice(cli[0].length));
  return engine === null ? undefined : { said: cli[1] ?? "", engineError: engine[1] ?? "" };
}
