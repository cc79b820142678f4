/** The Checkpointer conformance suite on the PostgreSQL engine: one schema for the file, emptied for each test; each engine on its own pool. */
import { checkpointerSuite } from '../../src/testing/checkpointer.suite.js';
import { usePostgresSchema } from '../helpers/postgres.js';

const pg = usePostgresSchema();

checkpointerSuite({ name: 'postgres', create: () => pg.engine() });
