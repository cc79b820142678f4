/** The Ledger conformance suite on the SQLite engine: a fresh database file per test, removed after it. */
import { ledgerSuite } from '../../src/testing/ledger.suite.js';
import { sqliteOnFreshFiles } from './sqlite-files.js';

ledgerSuite(sqliteOnFreshFiles);
