/**
 * @module cli/format
 * How every command prints, in one place: tables with column headers (cli-table3),
 * times in ISO 8601 with their zone, counts with the right plural, values as the
 * user's data (decoded from the tagged codec, `undefined` shown as such, never a
 * `$t` tag), colours only on a terminal (picocolors; never with `--json` or
 * `NO_COLOR`), progress bars on stderr only on a terminal (cli-progress), and the
 * `--json` form (tagged JSON, so nothing the state holds is lost).
 *
 * @example
 * ```ts
 * const style = outputStyle(options);
 * print(style, threads, () => table(style, ['thread', 'status'], threads.map((t) => [t.id, t.status])));
 * ```
 */
import Table from 'cli-table3';
import cliProgress from 'cli-progress';
import pc from 'picocolors';
import { encode } from '../codec/tagged-json.js';
import { printable } from '../internal/printable.js';

/** How a command prints: `--json`, and whether colours are on. */
export interface OutputStyle {
  json: boolean;
  color: boolean;
  /** picocolors, enabled or not by `color`. */
  c: ReturnType<typeof pc.createColors>;
}

/** True when colours may be used on `stream`: a terminal, and `NO_COLOR` not set (https://no-color.org). */
export function colorsAllowed(stream: NodeJS.WriteStream = process.stdout): boolean {
  const noColor = process.env.NO_COLOR;
  return stream.isTTY === true && (noColor === undefined || noColor === '');
}

/** The output style of a command's options: colours only on a terminal, without `--json` and `NO_COLOR`. */
export function outputStyle(options: { json?: boolean }): OutputStyle {
  const json = options.json === true;
  const color = !json && colorsAllowed();
  return { json, color, c: pc.createColors(color) };
}

/** A value as `--json` prints it: tagged JSON (a Date, a BigInt, `undefined` keep their type), indented. */
export function jsonText(value: unknown): string {
  return JSON.stringify(JSON.parse(encode(value)), null, 2);
}

/** Prints `value` as JSON with `--json`, else what `human()` returns (made {@link terminalSafe}); each ends with a newline. */
export function print(style: Pick<OutputStyle, 'json'>, value: unknown, human: () => string): void {
  process.stdout.write((style.json ? jsonText(value) : terminalSafe(human())) + '\n');
}

/**
 * The colour codes the commands' styling uses (picocolors: bold, red, green, yellow and
 * their resets), kept; then every control character. A stored colour code passes too,
 * harmless; one that hides text (conceal, reverse) does not.
 */
// eslint-disable-next-line no-control-regex
const UNSAFE = /\u001b\[(?:1|22|3[1-3]|39)m|[\u0000-\u0009\u000b-\u001f\u007f-\u009f\u202a-\u202e\u2066-\u2069]/g;

/**
 * Text as a terminal may be given it. What a command shows holds stored text written by
 * others (an error message a tool or a model produced, metadata), whose control
 * characters a terminal would obey: move the cursor over earlier lines, clear the
 * screen, set the title or the clipboard (OSC), reorder text (bidirectional controls).
 * Each is written as its escape (`\u001b`), as --json writes it; line breaks (tables
 * wrap on them) and the colour codes the command's own styling adds are kept.
 */
export function terminalSafe(text: string): string {
  return text.replace(UNSAFE, (match) => (match.length > 1 ? match : `\\u${match.charCodeAt(0).toString(16).padStart(4, '0')}`));
}

/** A time (ms since the epoch) in ISO 8601 with its zone: `2026-12-01T13:40:39.000Z`; `-` for none. */
export function isoTime(ms: number | null | undefined): string {
  return ms === null || ms === undefined ? '-' : new Date(ms).toISOString();
}

/** `1 thread`, `2 threads`, `1 ledger entry`, `3 ledger entries`. */
export function plural(n: number, one: string, many = `${one}s`): string {
  return `${n} ${n === 1 ? one : many}`;
}

const RAW = '\u0000raw:';
const RAW_END = '\u0000';

/** A stand-in JSON.stringify keeps as a string; {@link showValue} then unquotes it. */
function raw(text: string): string {
  return `${RAW}${text}${RAW_END}`;
}

/**
 * A decoded value for a person: JSON, with `undefined`, `10n`, `NaN`, `-0` written
 * as JavaScript writes them, a Date as its ISO string, a Map as its `[key, value]`
 * pairs, a Set as its elements, bytes as `<n bytes>`. Never a codec tag.
 *
 * @example
 * ```ts
 * showValue({ a: undefined, n: 10n }); // '{"a":undefined,"n":10n}'
 * ```
 */
export function showValue(value: unknown, indent?: number): string {
  const text = JSON.stringify(printable(value, raw), null, indent) ?? 'undefined';
  return text.replace(/"\\u0000raw:([^"]*?)\\u0000"/g, '$1');
}

/** What a table cell may hold. */
export type Cell = string | number | null | undefined;

/**
 * A table with a header row and no borders, columns separated by two spaces, lines
 * without trailing blanks. Headers are bold and dim when colours are on.
 */
export function table(style: Pick<OutputStyle, 'c'>, headers: string[], rows: Cell[][]): string {
  const t = new Table({
    head: headers.map((h) => style.c.bold(h)),
    chars: { top: '', 'top-mid': '', 'top-left': '', 'top-right': '', bottom: '', 'bottom-mid': '', 'bottom-left': '', 'bottom-right': '', left: '', 'left-mid': '', mid: '', 'mid-mid': '', right: '', 'right-mid': '', middle: '  ' },
    style: { head: [], border: [], 'padding-left': 0, 'padding-right': 0, compact: true },
  });
  for (const row of rows) t.push(row.map((cell) => (cell === null || cell === undefined ? '-' : String(cell))));
  return t
    .toString()
    .split('\n')
    .map((line) => line.trimEnd())
    .join('\n');
}

/** A progress display: `update(label, done, total?)` as work goes on, `done()` at the end. */
export interface Progress {
  update(label: string, done: number, total?: number): void;
  done(): void;
}

/**
 * A one-line progress bar on stderr (cli-progress) when `enabled` (a command passes
 * `stderr is a terminal and not --json`); a bar with a percentage when the total is
 * known, a running count when it is not. Does nothing when disabled (cli-progress
 * itself also draws only on a terminal).
 */
export function progress(enabled: boolean, stream: NodeJS.WritableStream = process.stderr): Progress {
  if (!enabled) return { update: () => undefined, done: () => undefined };
  let bar: cliProgress.SingleBar | undefined;
  return {
    update(label, done, total) {
      if (!bar) {
        bar = new cliProgress.SingleBar({
          stream,
          clearOnComplete: true,
          hideCursor: true,
          barsize: 30,
          format: (options, params, payload: { label: string; known: boolean }) =>
            payload.known
              ? `${payload.label} ${cliProgress.Format.BarFormat(params.progress, options)} ${String(Math.floor(params.progress * 100)).padStart(3)}% ${params.value}/${params.total}`
              : `${payload.label} ${params.value}`,
        });
        bar.start(total ?? 0, done, { label, known: total !== undefined });
        return;
      }
      if (total !== undefined) bar.setTotal(total);
      bar.update(done, { label, known: total !== undefined });
    },
    done() {
      bar?.stop();
      bar = undefined;
    },
  };
}

/** An interrupt as the tables show it (a pending one, or one answered, with who answered it). */
export interface InterruptRow {
  id: string;
  node: string;
  when: string;
  payload: unknown;
  ns?: string;
  /** Who answered it (answered interrupts only). */
  actor?: string;
}

/** Interrupts as a table: id, node, when, payload (and who answered, when any has). */
export function interruptTable(style: Pick<OutputStyle, 'c'>, interrupts: InterruptRow[]): string {
  const answered = interrupts.some((i) => i.actor !== undefined);
  return table(
    style,
    ['id', 'node', 'when', 'payload', ...(answered ? ['answered by'] : [])],
    interrupts.map((i) => [i.id, i.node, i.when, showValue(i.payload), ...(answered ? [i.actor] : [])]),
  );
}
