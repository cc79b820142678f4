/**
 * @module bench/scale/db-cpu
 * CPU time the PostgreSQL server spends for one database, read from /proc: the sum
 * of the time on CPU (`schedstat`, in ns: clock ticks are too coarse for backends
 * that run a fraction of a millisecond at a time) of the backend processes whose
 * title names the database
 * (`postgres: 15/main: postgres <db> 127.0.0.1(…) idle`). pg_stat_statements would
 * give per-statement times but needs a server restart to load; this needs nothing
 * and reads the same machine. Background processes (WAL writer, checkpointer) are
 * shared by every database and left out; a backend that exits between two readings
 * loses its share, so readings are taken while the contenders' connections are open.
 * Null where /proc cannot be read (not Linux, another machine's server).
 */
import { readdirSync, readFileSync } from 'node:fs';

/** CPU ms of the backends of `database` now (0 with none), or null when /proc cannot be read. */
export function databaseCpuMs(database: string): number | null {
  let total = 0;
  let entries: string[];
  try {
    entries = readdirSync('/proc');
    readFileSync('/proc/self/schedstat', 'utf8');
  } catch {
    return null;
  }
  for (const entry of entries) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const cmdline = readFileSync(`/proc/${entry}/cmdline`, 'utf8');
      if (!cmdline.startsWith('postgres: ') || !cmdline.includes(` ${database} `)) continue;
      // First field: time spent on the CPU, ns.
      total += Number(readFileSync(`/proc/${entry}/schedstat`, 'utf8').split(' ')[0]) / 1e6;
    } catch {
      // The process ended while being read.
    }
  }
  return total;
}
