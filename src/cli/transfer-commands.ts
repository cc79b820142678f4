/**
 * @module cli/transfer-commands
 * `cairn export`, `cairn import` and `cairn copy`: move threads between engines
 * with their whole history (see inspect/transfer), optionally with store
 * namespaces (`--store <prefix>`) and the artifacts they refer to
 * (`--artifacts <dir | s3://…>`). Each command names its database with `--db`
 * (copy: the source, and `--to` the target): a SQLite file or a PostgreSQL URL
 * (`postgres://user@host/db#schema`). The flags they had before (`--from`, import's
 * `--to`, `--from-artifacts`) still work, with a deprecation notice.
 */
import type { Command } from 'commander';
import { closeSync, createReadStream, createWriteStream, fstatSync, openSync } from 'node:fs';
import { once } from 'node:events';
import { createInterface } from 'node:readline';
import { decode, encode } from '../codec/tagged-json.js';
import type { Engine } from '../contracts/engine.js';
import type { ArtifactStore } from '../contracts/artifact-store.js';
import { checkExportStart, exportThreads, importThreads, type ImportReport, type TransferRecord } from '../inspect/transfer.js';
import { verifyThread } from '../inspect/verify.js';
import { ARTIFACTS_ARG, ARTIFACTS_HELP, checkArtifactLocation, openArtifactStore } from './artifact-commands.js';
import { deprecatedFlag } from './deprecated-flags.js';
import { cliKeyFile, ENGINE_URL_HELP, openEngine } from './engine-url.js';
import { checkKeyFile, keyFile } from '../crypto/key-provider.js';
import { CairnError, CorruptRecordError, InvalidExportError, InvalidOptionError, ThreadExistsError } from '../errors.js';
import { RAW_OPTION, REDACT_PATTERN_OPTION, repeatable, threadIdArgument } from './options.js';
import { plural, progress, type Progress } from './format.js';

/** The threads a command names: `--all`, or the ids given (not both, not neither), each one a thread can have. */
function checkSelection(ids: string[], all: boolean | undefined): void {
  if (all && ids.length) throw new InvalidOptionError(`name threads or pass --all, not both (got --all and ${ids.join(' ')}).`);
  if (!all && !ids.length) throw new InvalidOptionError('name the threads to move, or pass --all.');
  for (const id of ids) threadIdArgument(id);
}

/**
 * The key file the target is sealed with (copy's `--to-keys`, else `--keys` or
 * `CAIRN_KEY_FILE`), checked before the target is created: one that is not a key file,
 * or that could not be created where it is named, would fail at the first key, once
 * the target database was there.
 */
function checkTargetKeys(path: string | undefined): void {
  if (path !== undefined) checkKeyFile(path);
}

async function threadIds(engine: Engine, ids: string[], all: boolean | undefined): Promise<string[]> {
  if (!all) return ids;
  const found: string[] = [];
  for (let after: string | undefined; ; ) {
    const page = await engine.checkpointer.listThreads({ limit: 500, ...(after !== undefined ? { after } : {}) });
    found.push(...page.map((t) => t.id));
    if (page.length < 500) return found;
    after = page[page.length - 1]!.id;
  }
}

/**
 * `--store <prefix>`: namespace labels joined by `/` (`tenant/acme`), a JSON array of
 * labels for labels that hold a `/` (`["a/b","c"]`), or `/` for every namespace.
 */
export function parseStorePrefix(value: string): string[] {
  const text = value.trim();
  if (text === '/') return [];
  if (text.startsWith('[')) {
    let labels: unknown;
    try {
      labels = JSON.parse(text);
    } catch {
      labels = null;
    }
    if (!Array.isArray(labels) || !labels.every((l) => typeof l === 'string')) throw new InvalidOptionError(`--store ${text}: a JSON prefix is an array of label strings, e.g. ["tenant","acme"].`);
    return labels as string[];
  }
  const labels = text.split('/').filter((l) => l !== '');
  if (labels.length === 0) throw new InvalidOptionError(`--store ${JSON.stringify(value)}: name a namespace prefix (tenant/acme), or / for every namespace.`);
  return labels;
}

/** What export and copy moved, for a person. */
function describeMoved(
  verb: string,
  report: { threads: number; positions: number; signals?: number; ledgerEntries?: number; storeItems?: number; artifacts?: number; artifactsSkipped?: number },
): string {
  const parts = [plural(report.threads, 'thread'), plural(report.positions, 'position')];
  if (report.signals) parts.push(plural(report.signals, 'signal'));
  if (report.ledgerEntries !== undefined) parts.push(plural(report.ledgerEntries, 'ledger entry', 'ledger entries'));
  if (report.storeItems !== undefined) parts.push(plural(report.storeItems, 'store item'));
  if (report.artifacts !== undefined) parts.push(plural(report.artifacts, 'artifact'));
  const skipped = report.artifactsSkipped ? `; skipped ${plural(report.artifactsSkipped, 'artifact')}: pass --artifacts ${ARTIFACTS_ARG} to import them` : '';
  return `${verb} ${parts.join(', ')}${skipped}`;
}

/** An import's counts for {@link describeMoved}: store items and artifacts only when the stream had some. */
function importSummary(report: ImportReport) {
  return {
    threads: report.threads.length,
    positions: report.positions,
    signals: report.signals,
    ledgerEntries: report.ledgerEntries,
    ...(report.storeItems ? { storeItems: report.storeItems } : {}),
    ...(report.artifacts ? { artifacts: report.artifacts } : {}),
    artifactsSkipped: report.artifactsSkipped,
  };
}

/** Closes what is open, in reverse order. */
async function closeAll(...closables: ({ close(): Promise<void> } | undefined)[]): Promise<void> {
  for (const c of closables.reverse()) await c?.close();
}

/** Opens a file a flag names (`--in` to read, `--out` to write), or says in one line why it cannot: before anything else is opened or created. */
function openFile(flag: string, path: string, mode: 'r' | 'w'): number {
  let fd: number;
  try {
    fd = openSync(path, mode);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    const why = code === 'ENOENT' ? (mode === 'r' ? 'there is no such file' : 'its folder does not exist') : code === 'EACCES' ? 'permission denied' : code === 'EISDIR' ? 'it is a folder' : (code ?? (error as Error).message);
    throw new InvalidOptionError(`${flag} ${path}: cannot ${mode === 'r' ? 'read' : 'write'} it (${why}).`, { cause: error });
  }
  if (fstatSync(fd).isDirectory()) {
    closeSync(fd);
    throw new InvalidOptionError(`${flag} ${path}: cannot ${mode === 'r' ? 'read' : 'write'} it (it is a folder).`);
  }
  return fd;
}

/** The stream to write an export to: the `--out` file (its errors end the export with one line), else stdout. */
function exportOutput(path: string | undefined): NodeJS.WritableStream & { drained?(): Promise<void>; finish?(): Promise<void> } {
  if (!path) return process.stdout;
  const stream = createWriteStream('', { fd: openFile('--out', path, 'w') });
  // Kept for the export to report where it waits on the stream (drain, end), in one line.
  let failed: CairnError | undefined;
  const fail = (error: NodeJS.ErrnoException) => (failed ??= new CairnError(`--out ${path}: writing the export failed (${error.code ?? error.message}).`, { cause: error }));
  stream.on('error', fail);
  return Object.assign(stream, {
    async drained() {
      if (!failed) await Promise.race([once(stream, 'drain'), once(stream, 'close')]);
      if (failed) throw failed;
    },
    async finish() {
      // end's callback runs once the file is flushed, or on an error, which it is given
      // before the 'error' event is emitted: a write the disk refused (ENOSPC) at the end
      // of a small export is known only here.
      if (!failed)
        await new Promise<void>((resolve) =>
          stream.end((error?: Error | null) => {
            if (error) fail(error);
            resolve();
          }),
        );
      if (failed) throw failed;
    },
  });
}

async function* readLines(fd: number | undefined, name: string): AsyncGenerator<TransferRecord> {
  const input = fd !== undefined ? createReadStream('', { fd, encoding: 'utf8' }) : process.stdin;
  let number = 0;
  for await (const line of createInterface({ input, crlfDelay: Infinity })) {
    number++;
    if (line.trim()) yield exportRecord(line, number, name);
  }
}

/**
 * One line of an export. A line that is not JSON is a file that is not an export (or a
 * damaged one), said as such: not the CorruptRecordError of a stored row, whose advice
 * (`cairn verify`) is about a database.
 */
function exportRecord(line: string, number: number, name: string): TransferRecord {
  try {
    return decode<TransferRecord>(line, 'export line');
  } catch (error) {
    if (!CorruptRecordError.is(error)) throw error;
    const why = error.cause instanceof Error ? ` (${error.cause.message})` : '';
    throw new InvalidExportError(`${name} line ${number} is not JSON${why}: it is not a cairn export, or a damaged one. Nothing of it was imported.`, { cause: error });
  }
}

/** `first`, pulled from `rest` already, then the rest. */
async function* startingWith<T>(first: IteratorResult<T>, rest: AsyncIterator<T>): AsyncGenerator<T> {
  if (first.done) return;
  yield first.value;
  for (let next = await rest.next(); !next.done; next = await rest.next()) yield next.value;
}

/** Passes `records` through, counting their threads on `bar` (of `total`, when known). */
async function* countingThreads(records: AsyncIterable<TransferRecord>, bar: Progress, label: string, total?: number): AsyncGenerator<TransferRecord> {
  let threads = 0;
  for await (const record of records) {
    if (record.type === 'thread') bar.update(label, ++threads, total);
    yield record;
  }
}

export function registerTransferCommands(program: Command): void {
  const storeOption = ['--store <prefix>', 'also the store items under this namespace prefix (tenant/acme, ["a/b","c"], or / for all; repeatable)', repeatable(parseStorePrefix), [] as string[][]] as const;

  program
    .command('export [threads...]')
    .description('write threads with their whole history (positions, items, snapshots, ledger, times) as JSON lines; optionally store items and artifacts')
    .requiredOption('--db <url>', `the database to read: ${ENGINE_URL_HELP}`)
    .addOption(deprecatedFlag('--from <url>', '--db'))
    .option('--all', 'every thread')
    .option(...storeOption)
    .option(`--artifacts ${ARTIFACTS_ARG}`, `also the artifacts they refer to, read from this artifact store: ${ARTIFACTS_HELP}`)
    .option('--out <file>', 'write here instead of stdout (- for stdout)')
    .option(...RAW_OPTION)
    .option(...REDACT_PATTERN_OPTION)
    .option('--json', 'print the summary as JSON (on stdout with --out, else on stderr)')
    .action(async (ids: string[], options: { db: string; all?: boolean; store: string[][]; artifacts?: string; out?: string; json?: boolean; raw?: boolean; redactPattern: string[] }) => {
      checkSelection(ids, options.all);
      // `--out -` is stdout, as without --out, not a file named '-'.
      if (options.out === '-') delete options.out;
      const engine = await openEngine(options.db, 'read');
      let artifacts: ArtifactStore | undefined;
      let out: ReturnType<typeof exportOutput> | undefined;
      let end: Extract<TransferRecord, { type: 'end' }> | undefined;
      try {
        if (options.artifacts) artifacts = await openArtifactStore(options.artifacts, { engine });
        const selected = await threadIds(engine, ids, options.all);
        const exported = exportThreads(engine, selected, {
          ...(options.raw ? { raw: true } : {}),
          ...(options.redactPattern.length ? { redactPatterns: options.redactPattern } : {}),
          ...(options.store.length ? { store: options.store } : {}),
          ...(artifacts ? { artifacts } : {}),
        });
        // A bar only when the records do not go to the terminal the bar is drawn on.
        const bar = progress(process.stderr.isTTY === true && !options.json && selected.length > 1 && (options.out !== undefined || process.stdout.isTTY !== true));
        const records = countingThreads(exported, bar, 'exporting threads', selected.length);
        // The file is created with the first record: a thread that is not there leaves none.
        try {
          for await (const record of records) {
            out ??= exportOutput(options.out);
            if (!out.write(encode(record) + '\n')) await (out.drained ? out.drained() : new Promise((resolve) => out!.once('drain', resolve)));
            if (record.type === 'end') end = record;
          }
        } finally {
          bar.done();
        }
      } finally {
        if (out?.finish) await out.finish();
        await closeAll(engine, artifacts);
      }
      const summary = { threads: end!.threads, positions: end!.positions, ...(end!.storeItems !== undefined ? { storeItems: end!.storeItems } : {}), ...(end!.artifacts !== undefined ? { artifacts: end!.artifacts } : {}) };
      const text = options.json ? JSON.stringify(summary, null, 2) : describeMoved('exported', summary);
      (options.out ? process.stdout : process.stderr).write(text + '\n');
    });

  program
    .command('import')
    .description('read an export (JSON lines) into an engine, with its times, store items and artifacts; threads and store items that exist there are refused')
    .requiredOption('--db <url>', `the database to import into (created if missing): ${ENGINE_URL_HELP}`)
    .addOption(deprecatedFlag('--to <url>', '--db'))
    .option('--in <file>', 'read this file instead of stdin (- for stdin)')
    .option(`--artifacts ${ARTIFACTS_ARG}`, `store the export's artifacts in this artifact store (without it they are skipped): ${ARTIFACTS_HELP}`)
    .option('--json', 'print JSON')
    .action(async (options: { db: string; in?: string; artifacts?: string; json?: boolean }) => {
      // Everything that can be refused before the target is created: a refused import leaves no empty database.
      // `--in -` is stdin, as without --in (and as signal's `--payload-file -`), not a file named '-'.
      if (options.in === '-') delete options.in;
      const input = options.in !== undefined ? openFile('--in', options.in, 'r') : undefined;
      if (options.artifacts) checkArtifactLocation(options.artifacts, { create: true });
      checkTargetKeys(cliKeyFile());
      // The first record too: an empty input, or one that is not an export (not JSON, `{}`), creates no database either.
      const lines = readLines(input, options.in ?? 'stdin');
      const first = await lines.next();
      checkExportStart(first.done ? undefined : first.value);
      const engine = await openEngine(options.db, 'create');
      let artifacts: ArtifactStore | undefined;
      try {
        if (options.artifacts) artifacts = await openArtifactStore(options.artifacts, { create: true, engine });
        const bar = progress(process.stderr.isTTY === true && !options.json);
        let report: ImportReport;
        try {
          report = await importThreads(engine, countingThreads(startingWith(first, lines), bar, 'importing threads'), artifacts ? { artifacts } : {});
        } finally {
          bar.done();
        }
        process.stdout.write((options.json ? JSON.stringify(report, null, 2) : describeMoved('imported', importSummary(report))) + '\n');
      } finally {
        await closeAll(engine, artifacts);
      }
    });

  program
    .command('copy [threads...]')
    .description('export from one engine and import into another (optionally with store items and artifacts), then verify every copied thread on both sides')
    .requiredOption('--db <url>', `the source database (only read): ${ENGINE_URL_HELP}`)
    .addOption(deprecatedFlag('--from <url>', '--db'))
    .requiredOption('--to <url>', `the target database (created if missing): ${ENGINE_URL_HELP}`)
    .option('--all', 'every thread')
    .option(...storeOption)
    .option(`--artifacts ${ARTIFACTS_ARG}`, `also copy the artifacts the threads refer to, from this artifact store (with --to-artifacts): ${ARTIFACTS_HELP}`)
    .addOption(deprecatedFlag(`--from-artifacts ${ARTIFACTS_ARG}`, '--artifacts'))
    .option(`--to-artifacts ${ARTIFACTS_ARG}`, 'into this artifact store')
    .option('--to-keys <file>', 'seal the target with this key file (created if missing), whatever the source is: the way to encrypt a database written in the clear')
    .option('--json', 'print JSON')
    .action(async (ids: string[], options: { db: string; to: string; all?: boolean; store: string[][]; artifacts?: string; toArtifacts?: string; toKeys?: string; json?: boolean }) => {
      checkSelection(ids, options.all);
      if ((options.artifacts === undefined) !== (options.toArtifacts === undefined)) throw new InvalidOptionError('--artifacts and --to-artifacts go together: say where the artifacts are and where they go.');
      // Everything that can be refused before the target is created: a refused copy leaves no empty database.
      if (options.artifacts) checkArtifactLocation(options.artifacts);
      if (options.toArtifacts) checkArtifactLocation(options.toArtifacts, { create: true });
      checkTargetKeys(options.toKeys ?? cliKeyFile());
      // With --to-keys the source is read as it is: sealed rows with --keys, rows in the clear too.
      const source = await openEngine(options.db, 'read', options.toKeys ? { requireEncryption: false } : {});
      let target: Engine | undefined;
      let from: ArtifactStore | undefined;
      let to: ArtifactStore | undefined;
      try {
        // An encrypted side's blobs are opened (source) and sealed (target) with its engine's keys.
        if (options.artifacts) from = await openArtifactStore(options.artifacts, { engine: source });
        const threads = await threadIds(source, ids, options.all);
        // A copy moves the stored values as they are: redaction is for what is shown. In
        // process, never written down: not sealed, so a target without the source's keys takes it.
        const records = exportThreads(source, threads, { raw: true, seal: false, ...(options.store.length ? { store: options.store } : {}), ...(from ? { artifacts: from } : {}) })[Symbol.asyncIterator]();
        // The export's header comes once every thread was found (and can be exported): a thread that is not there creates no target either.
        const header = await records.next();
        target = await openEngine(options.to, 'create', options.toKeys ? { keys: keyFile(options.toKeys) } : {});
        if (options.toArtifacts) to = await openArtifactStore(options.toArtifacts, { create: true, engine: target });
        // Every clash before the first write: a copy is done whole or not at all.
        const clashes: string[] = [];
        for (const id of threads) if (await target.checkpointer.getThread(id)) clashes.push(id);
        if (clashes.length) throw new ThreadExistsError(clashes, target.name);
        const report = await importThreads(target, startingWith(header, records), to ? { artifacts: to } : {});
        const checks = [];
        const bar = progress(process.stderr.isTTY === true && !options.json && report.threads.length > 1);
        try {
          for (const id of report.threads) {
            const [before, after] = await Promise.all([verifyThread(source, id), verifyThread(target!, id)]);
            checks.push({ thread: id, source: before.ok, target: after.ok, positions: after.positions });
            bar.update('verifying copied threads', checks.length, report.threads.length);
          }
        } finally {
          bar.done();
        }
        if (options.json) process.stdout.write(JSON.stringify({ ...report, verify: checks }, null, 2) + '\n');
        else {
          process.stdout.write(describeMoved('copied', importSummary(report)) + '\n');
          for (const c of checks) process.stdout.write(`  ${c.source && c.target ? 'ok  ' : 'FAIL'} ${c.thread}: verify source ${c.source ? 'ok' : 'FAIL'}, target ${c.target ? 'ok' : 'FAIL'} (${c.positions} positions)\n`);
        }
        if (checks.some((c) => !c.source || !c.target)) process.exitCode = 1;
      } finally {
        await closeAll(source, target, from, to);
      }
    });
}
