import { Command, CommanderError, Option } from 'commander';

/**
 * The flag parser of every command of both binaries (`run`, `render`, `check-credentials`, the sidecar
 * adapter): commander, with one wording of its errors. Each command declares its options on a `Command`
 * from `flagCommand`; `parseFlags` returns the values by flag name, or the one error naming the flag.
 * Checking values (addresses, durations, booleans) and settings from the environment is the command's.
 */

/** A command whose output and exits are ours: commander neither prints (errors, help) nor exits the process. */
export function flagCommand(name: string): Command {
  return new Command(name)
    .exitOverride()
    .configureOutput({ writeErr: () => {}, writeOut: () => {} })
    .showSuggestionAfterError(false)
    .allowExcessArguments(true)
    .allowUnknownOption(false);
}

/**
 * A boolean flag as Go's flag package spells it: bare (`--leader-elect`) is true, `--leader-elect=true|false`
 * sets it; the value is checked by the command (`parseBool`).
 */
export function boolFlag(flags: string, description: string): Option {
  return new Option(`${flags} [bool]`, description).preset('true');
}

export type FlagsResult =
  { ok: true; flags: Map<string, string> } | { ok: false; help: true; usage: string } | { ok: false; help?: false; error: string };

/**
 * Parses `argv` (no command word) with `cmd`. Values are keyed by flag name without dashes, as given (a bare
 * boolean is `"true"`); a flag not given is absent unless it has a default. `aliases` maps other names a
 * flag is accepted under to its name; giving both spellings is an error.
 */
export function parseFlags(cmd: Command, argv: readonly string[], aliases: Readonly<Record<string, string>> = {}): FlagsResult {
  for (const [alias, name] of Object.entries(aliases)) {
    if (!cmd.options.some((o) => o.long === `--${alias}`)) {
      const target = cmd.options.find((o) => o.long === `--${name}`);
      cmd.addOption(new Option(`--${alias} <value>`).hideHelp().argParser(target?.parseArg ?? ((v: string) => v)));
    }
  }
  try {
    cmd.parse([...argv], { from: 'user' });
  } catch (e) {
    if (e instanceof CommanderError) {
      if (e.code === 'commander.helpDisplayed' || e.code === 'commander.help')
        return { ok: false, help: true, usage: cmd.helpInformation() };
      return { ok: false, error: describeCommanderError(e) };
    }
    throw e;
  }
  const flags = new Map<string, string>();
  for (const o of cmd.options) {
    const v: unknown = cmd.getOptionValue(o.attributeName());
    if (v === undefined || o.long === undefined) continue;
    flags.set(o.long.slice(2), String(v));
  }
  const extra = cmd.args[0];
  if (extra !== undefined) return { ok: false, error: `unexpected argument ${JSON.stringify(extra)}` };
  for (const [name, value] of flags) {
    // `--namespace --leader-elect`: commander takes the next word as the value; it is a forgotten one.
    if (value.startsWith('--') && !cmd.options.find((o) => o.long === `--${name}`)?.optional)
      return { ok: false, error: `flag --${name} needs a value` };
  }
  for (const [alias, name] of Object.entries(aliases)) {
    if (!flags.has(alias)) continue;
    if (flags.has(name) && cmd.getOptionValueSource(attribute(cmd, name)) === 'cli')
      return { ok: false, error: `--${alias} and --${name} are the same flag; give one` };
    flags.set(name, flags.get(alias)!);
    flags.delete(alias);
  }
  return { ok: true, flags };
}

const attribute = (cmd: Command, name: string): string => cmd.options.find((o) => o.long === `--${name}`)!.attributeName();

/** Commander's error in this project's words, naming the flag: "unknown flag --x", "flag --x needs a value". */
function describeCommanderError(e: CommanderError): string {
  const flag = /'(--?[^' ]+)/.exec(e.message)?.[1];
  switch (e.code) {
    case 'commander.unknownOption':
      return `unknown flag ${flag ?? e.message}`;
    case 'commander.optionMissingArgument':
      return `flag ${flag ?? e.message} needs a value`;
    case 'commander.missingMandatoryOptionValue':
      return `${flag ?? e.message} is required`;
    default:
      return e.message.replace(/^error: /, '');
  }
}
