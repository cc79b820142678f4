/** The Store conformance suite on an encrypted SQLite engine: every payload sealed, a fresh file and key file per test. */
import { storeSuite } from '../../src/testing/store.suite.js';
import { encryptedSqliteOnFreshFiles } from './encrypted-engines.js';

storeSuite(encryptedSqliteOnFreshFiles);
