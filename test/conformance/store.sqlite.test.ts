/** The Store conformance suite on the SQLite engine: a fresh database file per test, removed after it. */
import { storeSuite } from '../../src/testing/store.suite.js';
import { sqliteOnFreshFiles } from './sqlite-files.js';

storeSuite(sqliteOnFreshFiles);
