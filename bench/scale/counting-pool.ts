/**
 * @module bench/scale/counting-pool
 * A `pg.Pool` whose every statement is counted: each connection's `query` is wrapped
 * as the pool opens it, so statements sent through `pool.query` and through
 * checked-out clients are counted once each. Given to cairn (`postgres(pool)`), to
 * DBOS (`systemDatabasePool`) and to the raw inserts alike.
 */
import pg from 'pg';

export interface CountingPool {
  pool: pg.Pool;
  /** Statements sent so far. */
  statements(): number;
}

export function countingPool(connectionString: string, max: number, applicationName: string): CountingPool {
  let count = 0;
  const pool = new pg.Pool({ connectionString, max, application_name: applicationName });
  pool.on('error', () => undefined);
  pool.on('connect', (client) => {
    client.on('error', () => undefined);
    const query = client.query.bind(client) as (...args: unknown[]) => unknown;
    (client as unknown as { query: (...args: unknown[]) => unknown }).query = (...args: unknown[]) => {
      count++;
      return query(...args);
    };
  });
  return { pool, statements: () => count };
}
