/** The Ledger conformance suite on an encrypted SQLite engine: every payload sealed, a fresh file and key file per test. */
import { ledgerSuite } from '../../src/testing/ledger.suite.js';
import { encryptedSqliteOnFreshFiles } from './encrypted-engines.js';

ledgerSuite(encryptedSqliteOnFreshFiles);
