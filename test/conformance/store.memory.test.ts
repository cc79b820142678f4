/** The Store conformance suite on the in-memory engine. */
import { memory } from '../../src/engines/memory/index.js';
import { storeSuite } from '../../src/testing/store.suite.js';

storeSuite({ name: 'memory', create: () => memory() });
