/**
 * A small reader of the gcloud commands dccm publishes (model/firewallCommands.ts): splits a command
 * into shell words (bare words and single-quoted parts, as POSIX sh reads them) and its
 * `--flag value` pairs, so tests can run the commands against the emulator as REST calls.
 */
export function shellWords(command: string): string[] {
  const words: string[] = [];
  let word: string | undefined;
  for (let i = 0; i < command.length; i++) {
    const c = command[i];
    if (c === " ") {
      if (word !== undefined) words.push(word);
      word = undefined;
    } else if (c === "'") {
      const end = command.indexOf("'", i + 1);
      if (end < 0) throw new Error(`unterminated quote in: ${command}`);
      word = (word ?? "") + command.slice(i + 1, end);
      i = end;
    } else if (c === "\\") {
      word = (word ?? "") + command[i + 1];
      i++;
    } else word = (word ?? "") + c;
  }
  if (word !== undefined) words.push(word);
  return words;
}

export interface GcloudFirewallCommand {
  verb: "create" | "update" | "delete";
  name: string;
  flags: Map<string, string>;
}

/** `gcloud compute firewall-rules <verb> <name> --flag value …`; anything else is an error naming the command. */
export function parseGcloudFirewallCommand(command: string): GcloudFirewallCommand {
  const words = shellWords(command);
  const [gcloud, compute, group, verb, name, ...rest] = words;
  if (gcloud !== "gcloud" || compute !== "compute" || group !== "firewall-rules" || name === undefined)
    throw new Error(`not a gcloud compute firewall-rules command: ${command}`);
  if (verb !== "create" && verb !== "update" && verb !== "delete") throw new Error(`unknown verb ${verb}: ${command}`);
  const flags = new Map<string, string>();
  for (let i = 0; i < rest.length; i += 2) {
    const flag = rest[i];
    const value = rest[i + 1];
    if (!flag.startsWith("--") || value === undefined) throw new Error(`flag without value at ${flag}: ${command}`);
    flags.set(flag.slice(2), value);
  }
  return { verb, name, flags };
}
