/** The Ledger conformance suite on the in-memory engine. */
import { memory } from '../../src/engines/memory/index.js';
import { ledgerSuite } from '../../src/testing/ledger.suite.js';

ledgerSuite({ name: 'memory', create: () => memory() });
