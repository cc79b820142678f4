/**
 * A PostgreSQL server of a test's own, for faults that must not touch the shared
 * server other test files use (stopping it, restarting it): `initdb` into a temp
 * directory, `pg_ctl` on a free port of 127.0.0.1, trust auth, fsync off. initdb
 * refuses to run as root: as root the cluster is made and run by the `postgres` user.
 * The binaries are found in `CAIRN_TEST_PG_BIN`, or the newest /usr/lib/postgresql/<v>/bin.
 * A server that cannot be started FAILS the test with the reason, never skips it.
 */
import { execFile } from 'node:child_process';
import { chownSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);

export interface PrivateCluster {
  /** `postgres://postgres@127.0.0.1:<port>/postgres` */
  readonly url: string;
  readonly port: number;
  /** Stops the server (`fast`: clients are disconnected, open transactions rolled back; `immediate`: as a crash). */
  stop(mode?: 'fast' | 'immediate'): Promise<void>;
  start(): Promise<void>;
  /** Stops (fast) and starts the server again: every connection is dropped. */
  restart(): Promise<void>;
  /** Stops the server and removes its directory. */
  destroy(): Promise<void>;
}

function binDir(): string {
  if (process.env.CAIRN_TEST_PG_BIN) return process.env.CAIRN_TEST_PG_BIN;
  const root = '/usr/lib/postgresql';
  const versions = existsSync(root) ? readdirSync(root).filter((v) => existsSync(join(root, v, 'bin', 'initdb'))) : [];
  const newest = versions.sort((a, b) => Number(b) - Number(a))[0];
  if (!newest) throw new Error(`no PostgreSQL server binaries (initdb) under ${root}: install the server package, or set CAIRN_TEST_PG_BIN to its bin directory.`);
  return join(root, newest, 'bin');
}

async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

/** Initialises and starts a private cluster. */
export async function startPrivateCluster(): Promise<PrivateCluster> {
  const bin = binDir();
  const dir = mkdtempSync(join(tmpdir(), 'cairn-pg-private-'));
  const data = join(dir, 'data');
  const asRoot = process.getuid?.() === 0;
  // As root, every server command runs as the postgres user, who owns the directory.
  const as = async (command: string, args: string[]) => {
    const [file, argv] = asRoot ? ['runuser', ['-u', 'postgres', '--', join(bin, command), ...args]] : [join(bin, command), args];
    return run(file, argv, { timeout: 60_000 });
  };
  if (asRoot) {
    const uid = Number((await run('id', ['-u', 'postgres'])).stdout.trim());
    const gid = Number((await run('id', ['-g', 'postgres'])).stdout.trim());
    chownSync(dir, uid, gid);
  }
  const port = await freePort();
  const options = `-p ${port} -k ${dir} -c listen_addresses=127.0.0.1 -c fsync=off -c full_page_writes=off -c synchronous_commit=off`;
  const log = join(dir, 'server.log');
  const fail = (what: string, error: unknown): never => {
    const tail = existsSync(log) ? readFileSync(log, 'utf8').slice(-2_000) : '';
    throw new Error(`private PostgreSQL: ${what} failed: ${(error as Error).message}${tail ? `\nserver log:\n${tail}` : ''}`, { cause: error });
  };
  try {
    await as('initdb', ['-D', data, '-A', 'trust', '-U', 'postgres', '-E', 'UTF8', '--no-sync', '--no-instructions']);
  } catch (error) {
    rmSync(dir, { recursive: true, force: true });
    fail('initdb', error);
  }
  const start = () => as('pg_ctl', ['-D', data, '-o', options, '-l', log, '-w', '-t', '30', 'start']).then(() => undefined, (error) => fail('start', error));
  const stop = (mode: 'fast' | 'immediate' = 'fast') => as('pg_ctl', ['-D', data, '-m', mode, '-w', '-t', '30', 'stop']).then(() => undefined, (error) => fail('stop', error));
  await start();
  return {
    url: `postgres://postgres@127.0.0.1:${port}/postgres`,
    port,
    stop,
    start,
    restart: async () => {
      await stop('fast');
      await start();
    },
    destroy: async () => {
      await stop('immediate').catch(() => undefined);
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
