/**
 * @module testing/example-process
 * Runs the worked example (or the parallel example) once, in its own process, on
 * a SQLite file and a filesystem artifact folder, printing every run event as a
 * JSON line on stdout and a final `{"type":"result"}` line. `cairn demo` and the
 * crash tests start this file as a child process and kill it with SIGKILL at a
 * crash point (`CAIRN_CRASH_AT`), then start it again to resume.
 *
 * `--db` is a SQLite file, or a PostgreSQL URL (`postgres://…`) with `--pg-schema`.
 *
 * Usage: `node example-process.js --db <file|url> --artifacts <dir> [--pg-schema <s>] [--fixture worked|parallel]
 *   [--thread <id>] [--fixed-clock] [--snapshot-every <k>] [--effect-log <file>] [--audit <file>]`
 */
import { appendFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { encode } from '../codec/tagged-json.js';
import { sqlite } from '../engines/sqlite/index.js';
import { fsArtifacts } from '../artifacts/fs/index.js';
import type { RunEvent } from '../runtime/events.js';
import { workedExample } from './worked-example.js';
import { parallelExample } from './parallel-example.js';

const { values } = parseArgs({
  options: {
    db: { type: 'string' },
    'pg-schema': { type: 'string' },
    artifacts: { type: 'string' },
    fixture: { type: 'string', default: 'worked' },
    thread: { type: 'string', default: 'cust_42' },
    'fixed-clock': { type: 'boolean', default: false },
    'snapshot-every': { type: 'string' },
    'effect-log': { type: 'string' },
    audit: { type: 'string' },
  },
});

if (!values.db || !values.artifacts) {
  process.stderr.write('usage: example-process --db <file> --artifacts <dir> [...]\n');
  process.exit(2);
}

const print = (line: unknown) => process.stdout.write(encode(line) + '\n');
const onEvent = (event: RunEvent) => print(event);
const engine = /^postgres(ql)?:\/\//.test(values.db)
  ? (await import('../engines/postgres/index.js')).postgres(values.db, { schema: values['pg-schema'] ?? 'public', max: 4 })
  : sqlite(values.db);
const snapshotEvery = values['snapshot-every'] ? Number(values['snapshot-every']) : undefined;

try {
  const app =
    values.fixture === 'parallel'
      ? parallelExample({ engine, auditFile: values.audit ?? `${values.artifacts}/audit.log`, onEvent, ...(snapshotEvery ? { snapshotEvery } : {}) })
      : workedExample({
          engine,
          artifacts: fsArtifacts(values.artifacts),
          onEvent,
          ...(snapshotEvery ? { snapshotEvery } : {}),
          ...(values['fixed-clock'] ? { now: () => '2026-01-01T00:00:00.000Z' } : {}),
          ...(values['effect-log'] ? { onEffectRun: (name: string, key: string) => appendFileSync(values['effect-log']!, `${name} ${key}\n`) } : {}),
        });
  const result = await app.run({ thread: values.thread! });
  print({ type: 'result', status: result.status, seq: result.seq, state: result.state });
} catch (error) {
  print({ type: 'error', code: (error as { code?: string }).code ?? 'ERR_THROWN', message: (error as Error).message });
  process.exitCode = 1;
} finally {
  await engine.close();
}
