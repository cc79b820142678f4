/** The Checkpointer conformance suite on the SQLite engine: a fresh database file per test, removed after it. */
import { checkpointerSuite } from '../../src/testing/checkpointer.suite.js';
import { sqliteOnFreshFiles } from './sqlite-files.js';

checkpointerSuite(sqliteOnFreshFiles);
