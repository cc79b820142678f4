/**
 * @module cli/deprecated-flags
 * Old spellings of renamed flags, kept for a while so scripts do not break at once.
 * Each is hidden from the help, takes its value as the new flag would (the same
 * parser), hands it to the new flag, and prints one line on stderr saying what to
 * write instead. Giving both spellings is bad usage (exit 2).
 *
 * A command declares them beside the flag that replaced them; `cli/main` installs
 * them all once every command is declared.
 *
 * @example
 * ```ts
 * program.command('copy').requiredOption('--db <url>', 'the source').addOption(deprecatedFlag('--from <url>', '--db'));
 * installDeprecatedFlags(program);
 * // cairn copy --from a.db … → stderr: [cairn] --from is deprecated: use --db <url>.
 * ```
 */
import { Option, type Command } from 'commander';
import { InvalidOptionError } from '../errors.js';

/** How an old spelling maps to the new flag. */
export interface DeprecatedFlagOptions {
  /** What the notice says to write instead. Default: the new flag as declared (`--db <url>`). */
  use?: string;
  /**
   * The new flag's value, from the old flag's value, the new flag's current value and
   * whether the new flag was given too. Default: the old value; both given is bad usage.
   */
  apply?: (value: unknown, current: unknown, given: boolean) => unknown;
}

/** A hidden old spelling of the flag `instead` (a long flag of the same command). */
export class DeprecatedOption extends Option {
  constructor(
    flags: string,
    readonly instead: string,
    readonly mapping: DeprecatedFlagOptions = {},
  ) {
    super(flags);
    this.hideHelp();
  }
}

/** `flags` (`--from <url>`) as a hidden, deprecated spelling of `instead` (`--db`). */
export function deprecatedFlag(flags: string, instead: string, mapping: DeprecatedFlagOptions = {}): DeprecatedOption {
  return new DeprecatedOption(flags, instead, mapping);
}

/** Prints the one-line deprecation notice on stderr. */
export function deprecationNotice(old: string, use: string): void {
  process.stderr.write(`[cairn] ${old} is deprecated: use ${use}.\n`);
}

/** Source recorded for a value an old flag set while the command line was read. */
const DEPRECATED_SOURCE = 'deprecated';

/** Wires every {@link DeprecatedOption} of `program`'s commands to the flag it stands for. Call once, after every command is declared. */
export function installDeprecatedFlags(program: Command): void {
  for (const command of program.commands) {
    installDeprecatedFlags(command);
    const aliases = command.options
      .filter((o): o is DeprecatedOption => o instanceof DeprecatedOption)
      .map((old) => {
        const target = command.options.find((o) => o.long === old.instead && !(o instanceof DeprecatedOption));
        if (!target) throw new Error(`cairn CLI: ${command.name()} has no ${old.instead} for ${old.long} to stand for.`);
        if (target.parseArg) old.argParser(target.parseArg);
        const name = target.attributeName();
        // A required new flag is checked while the command line is read, before any
        // hook runs: the old flag fills it in at once (the hook below settles the value).
        if (target.mandatory) {
          command.on(`option:${old.name()}`, () => {
            if (command.getOptionValueSource(name) !== 'cli') command.setOptionValueWithSource(name, command.getOptionValue(old.attributeName()), DEPRECATED_SOURCE);
          });
        }
        return { old, target, name };
      });
    if (aliases.length === 0) continue;
    command.hook('preAction', () => {
      const given = new Set(aliases.filter((a) => command.getOptionValueSource(a.name) === 'cli').map((a) => a.name));
      for (const { old, target, name } of aliases) {
        const value = command.getOptionValue(old.attributeName());
        if (value === undefined) continue;
        deprecationNotice(old.long!, old.mapping.use ?? target.flags);
        const { apply } = old.mapping;
        if (!apply && given.has(name)) throw new InvalidOptionError(`${old.long} is the old spelling of ${target.long}: give ${target.long} only.`);
        command.setOptionValueWithSource(name, apply ? apply(value, command.getOptionValue(name), given.has(name)) : value, 'cli');
      }
    });
  }
}
