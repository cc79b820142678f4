/**
 * LangGraph's own checkpointer validation suite (`@langchain/langgraph-checkpoint-validation`)
 * run in library mode against `CairnSaver` on one engine. The suite's specs use vitest's
 * globals; its CLI runner is broken, so the globals are installed here for the files that
 * call it, and the specs registered under cairn's own saver name (no exempt-name skips).
 */
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { deltaChannelHistoryTests, validate } from '@langchain/langgraph-checkpoint-validation';
import type { Engine } from '../../src/contracts/engine.js';
import { CairnSaver } from '../../src/langgraph/index.js';

Object.assign(globalThis, { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it });

/** Registers the whole suite for savers on engines from `create` (a fresh, empty database each time). */
export function validateOn(engine: { name: string; create: () => Engine | Promise<Engine>; destroy: (engine: Engine) => Promise<void> }): void {
  const initializer = {
    checkpointerName: `CairnSaver (${engine.name})`,
    createCheckpointer: async () => new CairnSaver({ engine: await engine.create() }),
    destroyCheckpointer: async (saver: CairnSaver) => engine.destroy(saver.engine),
  };
  validate(initializer);
  deltaChannelHistoryTests(initializer);
}
