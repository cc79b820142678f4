/** The Checkpointer conformance suite on the in-memory engine. */
import { memory } from '../../src/engines/memory/index.js';
import { checkpointerSuite } from '../../src/testing/checkpointer.suite.js';

checkpointerSuite({ name: 'memory', create: () => memory() });
