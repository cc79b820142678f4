/**
 * The Store conformance suite on the PostgreSQL engine: one schema for the file, emptied
 * for each test; every engine shares the file's pool (a user's pool, which close() leaves open).
 */
import { storeSuite } from '../../src/testing/store.suite.js';
import { usePostgresSchema } from '../helpers/postgres.js';

const pg = usePostgresSchema();

storeSuite({ name: 'postgres', create: () => pg.engine({ pool: pg.pool }) });
