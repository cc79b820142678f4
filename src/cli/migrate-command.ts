/**
 * @module cli/migrate-command
 * `cairn migrate --check` and `cairn migrate --rewrite-snapshots`. Both can load the
 * application's state schema from a module (`--state ./dist/state.js#OrderState`)
 * to know the current version and the compatibility window.
 */
import type { Command } from 'commander';
import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { CairnError } from '../errors.js';
import { migrateCheck, type SchemaWindow } from '../inspect/migrate-check.js';
import { rewriteSnapshots } from '../runtime/rewrite-snapshots.js';
import type { StateSchema } from '../state/schema.js';
import { openEngine } from './engine-url.js';

interface MigrateOptions {
  db: string;
  check?: boolean;
  rewriteSnapshots?: boolean;
  state?: string;
  oldest?: number;
  current?: number;
  json?: boolean;
}

function isStateSchema(value: unknown): value is StateSchema {
  return typeof value === 'object' && value !== null && 'fieldNames' in value && 'oldestReadableVersion' in value && typeof (value as StateSchema).upcast === 'function';
}

/** Loads `<file>[#export]`: the named export, or the module's only state schema. */
export async function loadStateSchema(spec: string): Promise<StateSchema> {
  const [file, name] = spec.split('#') as [string, string | undefined];
  const module = (await import(pathToFileURL(resolve(file)).href)) as Record<string, unknown>;
  if (name !== undefined) {
    if (!isStateSchema(module[name])) throw new CairnError(`${file} has no state schema exported as "${name}".`);
    return module[name];
  }
  const schemas = Object.entries(module).filter(([, value]) => isStateSchema(value));
  if (schemas.length !== 1) {
    throw new CairnError(`${file} exports ${schemas.length} state schemas${schemas.length ? ` (${schemas.map(([n]) => n).join(', ')})` : ''}: name one with ${file}#<export>.`);
  }
  return schemas[0]![1] as StateSchema;
}

export function registerMigrateCommand(program: Command): void {
  program
    .command('migrate')
    .description('report stored schema versions (--check) or write snapshots at the current version for active threads (--rewrite-snapshots)')
    .option('--db <file>', 'the cairn SQLite file', './cairn.db')
    .option('--check', 'count threads and positions per schema version and list threads outside the window')
    .option('--rewrite-snapshots', 'store a snapshot at the current version for every active thread whose head is older (needs --state)')
    .option('--state <module>', "the application's state schema: <file>[#<export>] (a JS module)")
    .option('--oldest <n>', 'oldest readable version (without --state)', (v) => Number(v))
    .option('--current <n>', 'current version (without --state)', (v) => Number(v))
    .option('--json', 'print JSON')
    .action(async (options: MigrateOptions) => {
      if (!options.check && !options.rewriteSnapshots) throw new CairnError('say what to do: --check or --rewrite-snapshots.');
      const schema = options.state ? await loadStateSchema(options.state) : undefined;
      const engine = openEngine(options.db);
      try {
        if (options.check) {
          const window: SchemaWindow | null = schema
            ? { currentVersion: schema.version, oldestReadableVersion: schema.oldestReadableVersion }
            : options.current !== undefined
              ? { currentVersion: options.current, oldestReadableVersion: options.oldest ?? options.current }
              : null;
          const report = await migrateCheck(engine.checkpointer, window);
          if (options.json) process.stdout.write(JSON.stringify(report, null, 2) + '\n');
          else {
            const lines = [
              window ? `current version ${window.currentVersion}, readable from ${window.oldestReadableVersion}` : 'no window given (--state, or --current/--oldest): counts only',
              `${report.threads} threads, ${report.positions} positions${report.childPositions ? ` (${report.childPositions} of them in child runs' namespaces, counted by their own schema versions)` : ''}`,
              ...report.versions.map(
                (v) => `  v${v.version}: ${v.threads} thread head(s), ${v.positions} position(s)${v.readable === null ? '' : v.readable ? '' : '  OUTSIDE THE WINDOW'}`,
              ),
              ...(report.outside.length ? ['threads that cannot be read:', ...report.outside.map((o) => `  ${o.threadId} (${o.status}) head at v${o.headVersion}: ${o.reason}`)] : []),
            ];
            process.stdout.write(lines.join('\n') + '\n');
          }
          if (report.outside.length) process.exitCode = 1;
        }
        if (options.rewriteSnapshots) {
          if (!schema) throw new CairnError('--rewrite-snapshots needs --state <module>[#export]: the upcasters live in your code.');
          const report = await rewriteSnapshots(engine, schema);
          if (options.json) process.stdout.write(JSON.stringify(report, null, 2) + '\n');
          else {
            const lines = [
              `rewrote ${report.rewritten.length} snapshot(s) at version ${schema.version}`,
              ...report.rewritten.map((r) => `  ${r.threadId} seq ${r.seq}: v${r.fromVersion} → v${r.toVersion}`),
              ...(report.skipped.length ? [`skipped ${report.skipped.length}:`, ...report.skipped.map((s) => `  ${s.threadId}: ${s.reason}`)] : []),
            ];
            process.stdout.write(lines.join('\n') + '\n');
          }
        }
      } finally {
        await engine.close();
      }
    });
}
