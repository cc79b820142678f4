/** The Checkpointer conformance suite on an encrypted SQLite engine: every payload sealed, a fresh file and key file per test. */
import { checkpointerSuite } from '../../src/testing/checkpointer.suite.js';
import { encryptedSqliteOnFreshFiles } from './encrypted-engines.js';

checkpointerSuite(encryptedSqliteOnFreshFiles);
