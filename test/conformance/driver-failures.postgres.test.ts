/** Driver failures on PostgreSQL: the engine runs on a pool whose queries (its own and its clients') reject with a pg-like XX001 once broken. */
import type pg from 'pg';
import type { PgQueryConfig, PoolClientLike, PoolLike } from '../../src/engines/postgres/index.js';
import { postgres } from '../../src/engines/postgres/index.js';
import { usePostgresSchema } from '../helpers/postgres.js';
import { driverFailureSuite } from './driver-failures.js';

const schema = usePostgresSchema();

/** `pool` as the engine sees it: every query, on the pool or on a client it hands out, rejects with `error` while `state.broken`. */
function breakable(pool: pg.Pool, state: { broken: boolean }, error: Error): PoolLike {
  const query = (target: { query(config: PgQueryConfig): Promise<unknown> }, config: PgQueryConfig) =>
    (state.broken ? Promise.reject(error) : target.query(config)) as ReturnType<PoolLike['query']>;
  return {
    query: (config) => query(pool as never, config),
    connect: async () => {
      const client = await pool.connect();
      const wrapped: PoolClientLike = {
        query: (config) => query(client as never, config),
        release: (failure) => client.release(failure),
        on: (event, listener) => client.on(event as 'notification', listener as never),
        off: (event, listener) => client.off(event as 'notification', listener as never),
      };
      return wrapped;
    },
    end: () => pool.end(),
  };
}

driverFailureSuite({
  name: 'postgres',
  create: async () => {
    await schema.empty();
    const state = { broken: false };
    const error = Object.assign(new Error('could not read block 0 in file "base/16384/16385": read only 0 of 8192 bytes'), { code: 'XX001', severity: 'ERROR' });
    const engine = postgres(breakable(schema.pool, state, error), { schema: schema.schema });
    return {
      engine,
      error,
      fail: () => void (state.broken = true),
      heal: () => void (state.broken = false),
      cleanup: () => engine.close(),
    };
  },
});
