/**
 * @module cli/erase-command
 * `cairn erase --tenant T | --thread ID [--artifacts …] [--store prefix] --yes`: a thin
 * face over `eraseTenant` (inspect/erase). Without `--yes` it lists what it would erase
 * and erases nothing (exit 1).
 */
import type { Command } from 'commander';
import type { Engine } from '../contracts/engine.js';
import { InvalidOptionError, ThreadNotFoundError } from '../errors.js';
import { eraseTenant, type ErasureReport } from '../inspect/erase.js';
import { openArtifactStore, ARTIFACTS_ARG, ARTIFACTS_HELP } from './artifact-commands.js';
import { DB_OPTION, openEngine } from './engine-url.js';
import { outputStyle, plural, print } from './format.js';
import { tenantName, threadIdArgument } from './options.js';

interface EraseFlags {
  db: string;
  tenant?: string;
  thread?: string;
  artifacts?: string;
  store: string[];
  vacuum?: string;
  yes?: boolean;
  json?: boolean;
}

/** The thread `--thread` names, for the listing without --yes: one that is not there is ThreadNotFoundError, as with --yes. */
async function threadToErase(engine: Engine, id: string): Promise<string[]> {
  if (!(await engine.checkpointer.getThread(id))) throw new ThreadNotFoundError(id, { engine: engine.name });
  return [id];
}

/** Every thread of `tenant`, page by page: the listing counts all that --yes erases, not the first page. */
async function tenantThreads(engine: Engine, tenant: string): Promise<string[]> {
  const ids: string[] = [];
  for (let after: string | undefined; ; ) {
    const page = await engine.checkpointer.listThreads({ tenant, limit: 1000, ...(after !== undefined ? { after } : {}) });
    ids.push(...page.map((t) => t.id));
    if (page.length < 1000) return ids;
    after = page.at(-1)!.id;
  }
}

/** The report for a person. */
function describe(report: ErasureReport): string {
  const r = report.rows;
  const headline = report.found
    ? `erased ${report.scope}: ${plural(report.threads.length, 'thread')}${report.fenced.length ? ` (${report.fenced.length} taken from a live run)` : ''}`
    : `erased ${report.scope}: nothing found: no threads, store rows, artifacts or data keys of tenant ${JSON.stringify(report.tenant)}. Check the name (erasing again is harmless).`;
  const lines = [
    headline,
    `  rows: ${[plural(r.positions, 'position'), plural(r.items, 'item'), plural(r.snapshots, 'snapshot'), plural(r.pendingWrites, 'pending write'), plural(r.failures, 'failure'), plural(r.ledgerEntries, 'ledger entry', 'ledger entries'), plural(r.signals, 'signal'), plural(r.pins, 'pin')].join(', ')}`,
    `  store: ${plural(report.store.items, 'item')}${report.store.tombstones ? `, ${plural(report.store.tombstones, 'deleted item')}` : ''}${report.store.overwrites ? ` and ${plural(report.store.overwrites, 'overwrite record')}` : ''} in ${plural(report.store.namespaces.length, 'namespace')}, ${plural(report.store.pins, 'global pin')}`,
    report.artifacts
      ? `  artifacts: ${report.artifacts.deleted} deleted (${plural(report.artifacts.blobs, 'blob')}, ${plural(report.artifacts.bytes, 'byte')}), ${report.artifacts.keptShared} kept (others refer to them)`
      : '  artifacts: not erased (no --artifacts)',
    report.keys.encrypted
      ? `  keys: ${plural(report.keys.destroyed, 'data key')} of ${report.keys.scopes.join(', ')} destroyed; provider ${report.keys.provider} ${report.keys.providerDestroys ? 'destroyed its key-encryption keys: backups and exports taken before cannot be opened' : 'cannot destroy keys: backups and exports taken before still open'}`
      : '  keys: none (the engine is not encrypted)',
  ];
  if (report.files) {
    for (const done of report.files.done) lines.push(`  done: ${done}`);
    for (const remains of report.files.remains) lines.push(`  remains: ${remains}`);
  }
  for (const note of report.notes) lines.push(`  note: ${note}`);
  return lines.join('\n');
}

export function registerEraseCommand(program: Command): void {
  program
    .command('erase')
    .description("erase a tenant (--tenant) or a thread without one (--thread): its threads with everything under them, its store rows, the artifacts only it referred to, and on an encrypted engine its keys; needs --yes")
    .option(...DB_OPTION)
    .option('--tenant <tenant>', 'the tenant to erase', tenantName)
    .option('--thread <id>', 'a thread without a tenant to erase')
    .option(`--artifacts ${ARTIFACTS_ARG}`, `the artifact store the threads wrote to: ${ARTIFACTS_HELP}`)
    .option('--store <prefix>', "a store namespace prefix that belongs to the tenant (labels separated by /), repeatable", (value: string, all: string[]) => [...all, value], [] as string[])
    .option('--vacuum <mode>', 'PostgreSQL: full (VACUUM FULL) or none, default a plain VACUUM; SQLite: full runs VACUUM, default none')
    .option('--yes', 'erase (without it: list what would be erased, erase nothing)')
    .option('--json', 'print JSON')
    .action(async (options: EraseFlags) => {
      const style = outputStyle(options);
      if ((options.tenant === undefined) === (options.thread === undefined)) throw new InvalidOptionError('cairn erase needs exactly one of --tenant <tenant> or --thread <id>.');
      if (options.thread !== undefined) threadIdArgument(options.thread);
      const vacuum = options.vacuum === undefined ? undefined : options.vacuum === 'full' ? ('full' as const) : options.vacuum === 'none' ? false : null;
      if (vacuum === null) throw new InvalidOptionError(`--vacuum must be full or none, got ${JSON.stringify(options.vacuum)}.`);
      const engine = await openEngine(options.db, 'write');
      const artifacts = options.artifacts ? await openArtifactStore(options.artifacts, { engine }) : undefined;
      try {
        if (!options.yes) {
          const threads = options.thread !== undefined ? await threadToErase(engine, options.thread) : await tenantThreads(engine, options.tenant!);
          const none = threads.length === 0 ? ' (no thread of this tenant was found: check the name; its store rows and keys are looked for with --yes)' : '';
          print(style, { erased: false, threads }, () => `would erase ${options.tenant !== undefined ? `tenant ${options.tenant}` : `thread ${options.thread}`}: ${plural(threads.length, 'thread')}${threads.length ? ` (${threads.slice(0, 10).join(', ')}${threads.length > 10 ? ', …' : ''})` : none}. Nothing erased: pass --yes.`);
          process.exitCode = 1;
          return;
        }
        const report = await eraseTenant(engine, {
          ...(options.tenant !== undefined ? { tenant: options.tenant } : { thread: options.thread! }),
          ...(artifacts ? { artifacts } : {}),
          store: options.store.map((prefix) => prefix.split('/')),
          ...(vacuum !== undefined ? { vacuum } : {}),
          actor: 'cli',
        });
        print(style, report, () => describe(report));
      } finally {
        await artifacts?.close();
        await engine.close();
      }
    });
}
