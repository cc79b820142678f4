/** The Ledger conformance suite on the PostgreSQL engine: one schema for the file, emptied for each test; each engine on its own pool. */
import { ledgerSuite } from '../../src/testing/ledger.suite.js';
import { usePostgresSchema } from '../helpers/postgres.js';

const pg = usePostgresSchema();

ledgerSuite({ name: 'postgres', create: () => pg.engine() });
