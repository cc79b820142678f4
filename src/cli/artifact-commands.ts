/**
 * @module cli/artifact-commands
 * `cairn gc` (retention and garbage collection of artifacts) and the artifact half
 * of `cairn verify --artifacts`: thin faces over `inspect/gc` and
 * `inspect/artifact-verify`. An artifact location is a directory (the fs store)
 * or `s3://bucket/prefix/?endpoint=…&region=…&path-style=1` (credentials from the
 * usual AWS environment).
 */
import type { Command } from 'commander';
import { statSync } from 'node:fs';
import type { ArtifactStore } from '../contracts/artifact-store.js';
import type { Engine } from '../contracts/engine.js';
import { CairnError, InvalidOptionError } from '../errors.js';
import { FsArtifactStore } from '../artifacts/fs/index.js';
import { encryptedArtifacts } from '../crypto/artifacts.js';
import { parseRefId } from '../artifacts/refs.js';
import { collectArtifacts, parseRetentionRule, type GcReport, type RetentionPolicy } from '../inspect/gc.js';
import { parseDuration } from '../artifacts/helpers.js';
import { verifyArtifacts, type ArtifactVerifyReport } from '../inspect/artifact-verify.js';
import { seqLabel } from '../inspect/walk.js';
import { DB_OPTION, openEngine } from './engine-url.js';
import { duration, repeatable } from './options.js';
import { isoTime, plural, progress } from './format.js';

/** The argument of every artifact store flag (`--artifacts`, copy's `--to-artifacts`), as the help shows it. */
export const ARTIFACTS_ARG = '<dir | s3://bucket/prefix>';

/** What {@link ARTIFACTS_ARG} takes, for the help. */
export const ARTIFACTS_HELP = 'a directory (the fs artifact store) or s3://bucket/prefix/?endpoint=…&region=…&path-style=1 (credentials from the AWS environment)';

/**
 * Opens the artifact store a location names; a directory must exist unless `create` (an
 * import's target). With the `engine` it serves, an encrypted engine's store opens and
 * seals blobs with that engine's keys (`encryptedArtifacts`), as the application's does.
 */
export async function openArtifactStore(location: string, options: { create?: boolean; engine?: Engine } = {}): Promise<ArtifactStore> {
  const store = await openPlainArtifactStore(location, options.create === true);
  return options.engine?.encryption ? encryptedArtifacts(store, { engine: options.engine }) : store;
}

/**
 * Refuses, before anything is opened, a location {@link openArtifactStore} would refuse:
 * an s3:// URL that does not parse, a directory that is not there (unless `create`), a
 * file. For a command that creates a database (import, copy's target), so that a bad
 * artifact flag leaves no empty database behind. Opens and creates nothing.
 */
export function checkArtifactLocation(location: string, options: { create?: boolean } = {}): void {
  if (location.startsWith('s3://')) {
    s3Location(location);
    return;
  }
  const path = location.startsWith('file:') ? location.slice('file:'.length) : location;
  const entry = statSync(path, { throwIfNoEntry: false });
  if (options.create !== true && !entry) throw new CairnError(`no artifact directory at ${path}. Pass --artifacts <dir> (the folder given to fsArtifacts) or s3://bucket/prefix.`);
  // A file (a database named by mistake) would be read as an empty store: a gc or verify reporting 0 artifacts.
  if (entry && !entry.isDirectory()) throw new CairnError(`${path} is a file, not an artifact directory. Pass --artifacts <dir> (the folder given to fsArtifacts) or s3://bucket/prefix.`);
}

async function openPlainArtifactStore(location: string, create: boolean): Promise<ArtifactStore> {
  checkArtifactLocation(location, { create });
  if (location.startsWith('s3://')) {
    const { url, prefix } = s3Location(location);
    const client: Record<string, unknown> = {};
    const endpoint = url.searchParams.get('endpoint');
    if (endpoint) client.endpoint = endpoint;
    client.region = url.searchParams.get('region') ?? process.env.AWS_REGION ?? 'us-east-1';
    if (url.searchParams.get('path-style') === '1' || url.searchParams.get('path-style') === 'true') client.forcePathStyle = true;
    const { s3Artifacts } = await import('../artifacts/s3/index.js');
    return s3Artifacts({ bucket: url.hostname, ...(prefix ? { prefix: prefix.endsWith('/') ? prefix : `${prefix}/` } : {}), client });
  }
  return new FsArtifactStore(location.startsWith('file:') ? location.slice('file:'.length) : location);
}

/** An `s3://bucket/prefix?...` location's URL and its decoded prefix; a location that does not parse is bad usage. */
function s3Location(location: string): { url: URL; prefix: string } {
  try {
    const url = new URL(location);
    return { url, prefix: decodeURIComponent(url.pathname.replace(/^\/+/, '')) };
  } catch (error) {
    throw new InvalidOptionError(`artifact location ${JSON.stringify(location)} is not an s3://bucket/prefix URL (${(error as Error).message}).`);
  }
}

export function size(bytes: number): string {
  const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
  let value = bytes;
  let unit = 0;
  while (value >= 1024 && unit < units.length - 1) {
    value /= 1024;
    unit++;
  }
  return `${unit === 0 ? value : value.toFixed(1)} ${units[unit]}`;
}

/** The human form of a gc report. */
export function formatGcReport(report: GcReport, location: string, grace: string): string {
  const verb = report.dryRun ? 'would delete' : 'deleted';
  const r = report.roots;
  const lines = [
    `cairn gc${report.dryRun ? ' --dry-run' : ''}: ${plural(report.scanned, 'artifact')} in ${location}`,
    ...(report.deletedThreads.length
      ? [`  threads: ${report.dryRun ? 'would delete' : 'deleted'} ${plural(report.deletedThreads.length, 'thread')} by retention rules (with their positions, ledger and pins): ${report.deletedThreads.join(', ')}`]
      : []),
    `  roots: ${plural(r.threads, 'thread')} (${r.releasedThreads} ${report.dryRun ? 'to be deleted' : 'deleted'} by retention rules), ${plural(r.positions, 'position')}, ${plural(r.snapshots, 'snapshot')}, ${plural(r.ledgerEntries, 'ledger entry', 'ledger entries')}, ${plural(r.storeItems, 'store item')}, ${plural(r.pins, 'pin')} → ${plural(r.refs, 'distinct ref')}`,
    `  kept: ${report.kept.referenced} referenced, ${report.kept.pinned} pinned, ${report.kept.inGrace} in grace (written or used since ${isoTime(report.cutoff)}, grace ${grace})${report.refreshed ? `, ${report.refreshed} refreshed while collecting` : ''}`,
    `  ${verb} ${plural(report.victims.length, 'artifact')} (${size(report.bytes)})${report.victims.length ? ':' : ''}`,
  ];
  for (const v of report.victims) {
    const why =
      v.reason === 'expired'
        ? `expired by rule ${v.rule}${v.referencedBy ? ` (still referenced by thread ${v.referencedBy.thread} ${seqLabel(v.referencedBy.ns, v.referencedBy.seq)}: that ref will dangle)` : ''}`
        : 'no retained position, store value or pin refers to it';
    lines.push(`    ${v.ref.id}  ${size(v.ref.size_bytes)} ${v.ref.media_type}, last used ${isoTime(v.freshAt)}: ${why}`);
  }
  lines.push(`  sweep: ${report.dryRun ? 'would remove' : 'removed'} ${plural(report.sweep.blobs, 'unreferenced blob')} (${size(report.sweep.bytes)}) and ${report.sweep.temps} ${report.sweep.temps === 1 ? 'temp file or incomplete upload' : 'temp files or incomplete uploads'}`);
  return lines.join('\n');
}

/** The human form of an artifact verification report. */
export function formatArtifactVerifyReport(report: ArtifactVerifyReport): string {
  const lines = [
    `${report.ok ? 'ok  ' : 'FAIL'} artifacts: ${report.checked} re-hashed (${size(report.bytes)}), ${report.corrupt.length} corrupted; ${plural(report.refs, 'ref')} in ${plural(report.positions, 'position')} and the store, ${report.dangling.length} dangling`,
  ];
  for (const c of report.corrupt) lines.push(`     corrupted ${c.ref.id}: ${c.message}`);
  for (const d of report.dangling) {
    const where = d.thread !== undefined ? `thread ${d.thread} ${seqLabel(d.ns ?? '', d.seq!)}` : `store ${d.store!.namespace.join('/')}/${d.store!.key}`;
    const what = d.why === 'missing' ? 'is not stored' : d.why === 'mismatch' ? 'is stored with another digest or size' : 'has corrupted bytes';
    lines.push(`     dangling: ${where} refers to ${d.ref.id}, which ${what}`);
  }
  return lines.join('\n');
}

/** `cairn verify --artifacts <location>`: called by the verify command after the chain checks. */
export async function verifyArtifactsCommand(engine: Engine, location: string, options: { json?: boolean; thread?: string }): Promise<ArtifactVerifyReport> {
  const artifacts = await openArtifactStore(location, { engine });
  const bar = progress(process.stderr.isTTY === true && !options.json);
  try {
    return await verifyArtifacts({
      artifacts,
      checkpointer: engine.checkpointer,
      store: engine.store,
      ...(options.thread ? { threads: [options.thread] } : {}),
      onProgress: (p) => bar.update(p.phase === 'hash' ? 're-hashing artifacts' : 'checking refs', p.done, p.total),
    });
  } finally {
    bar.done();
    await artifacts.close();
  }
}

interface GcCommandOptions {
  db: string;
  artifacts: string;
  dryRun?: boolean;
  grace: string;
  rule: string[];
  pin: string[];
  json?: boolean;
}

export function registerArtifactCommands(program: Command): void {
  program
    .command('gc')
    .description('delete the threads thread rules retire, then collect artifacts no kept thread, store value or pin refers to (and those artifact rules expire)')
    .requiredOption(`--artifacts ${ARTIFACTS_ARG}`, `the artifact store: ${ARTIFACTS_HELP}`)
    .option(...DB_OPTION)
    .option('--dry-run', 'report what would be deleted and why; delete nothing')
    .option('--grace <duration>', 'never collect what was written or used more recently than this: a duration (30s, 15m, 24h, 7d)', duration, '24h')
    .option(
      '--rule <rule>',
      'a retention rule, repeatable: threads:status=completed,olderThan=30d (deletes those threads) or artifacts:mediaType=image/*,olderThan=7d; olderThan is a duration (12h, 30d, 2w)',
      repeatable((v) => (parseRetentionRule(v), v)),
      [] as string[],
    )
    .option('--pin <id>', 'keep this artifact id whatever the roots say (repeatable)', repeatable((v) => (parseRefId(v), v)), [] as string[])
    .option('--json', 'print the report as JSON')
    .action(async (options: GcCommandOptions) => {
      const retention: RetentionPolicy = { threads: [], artifacts: [] };
      for (const text of options.rule) {
        const rule = parseRetentionRule(text);
        if ('threads' in rule) retention.threads!.push(rule.threads);
        else retention.artifacts!.push(rule.artifacts);
      }
      const engine = await openEngine(options.db, options.dryRun ? 'read' : 'write');
      const artifacts = await openArtifactStore(options.artifacts, { engine });
      const bar = progress(process.stderr.isTTY === true && !options.json);
      try {
        const report = await collectArtifacts({
          checkpointer: engine.checkpointer,
          store: engine.store,
          ledger: engine.ledger,
          artifacts,
          retention,
          graceMs: parseDuration(options.grace),
          pins: options.pin,
          dryRun: options.dryRun === true,
          onProgress: (p) => (p.phase === 'mark' ? bar.update(`marking: ${p.threads} threads, ${p.refs} refs`, p.positions) : bar.update(options.dryRun ? 'checking' : 'collecting', p.scanned, p.total)),
        });
        bar.done();
        process.stdout.write(`${options.json ? JSON.stringify(report, null, 2) : formatGcReport(report, options.artifacts, options.grace)}\n`);
      } finally {
        bar.done();
        await artifacts.close();
        await engine.close();
      }
    });
}
