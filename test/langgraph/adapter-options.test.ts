/**
 * `new CairnSaver(options)` and `new CairnStore(options)` take one options object
 * holding a cairn engine: the engine itself in its place (`new CairnSaver(engine)`),
 * nothing at all, or a key they do not take (a misspelt `busyWait`) is
 * InvalidOptionError when the adapter is made, not a TypeError at the first call or a
 * default silently kept.
 */
import { describe, expect, it } from 'vitest';
import { InvalidOptionError } from '../../src/errors.js';
import { memory } from '../../src/engines/memory/index.js';
import { CairnSaver, CairnStore } from '../../src/langgraph/index.js';

describe('LangGraph adapter options', () => {
  it('refuse the engine in place of { engine }, no options, and unknown keys; take every documented one', async () => {
    const engine = memory();
    const Saver = CairnSaver as unknown as new (options: unknown) => CairnSaver;
    const Store = CairnStore as unknown as new (options: unknown) => CairnStore;
    for (const options of [engine, undefined, null, {}, { engine, busyWait: 5 }]) {
      expect(() => new Saver(options), String(options)).toThrow(InvalidOptionError);
    }
    expect(() => new Saver(engine)).toThrow(/takes an options object holding a cairn engine .*not an engine itself/);
    for (const options of [engine, undefined, { engine, namespacePrefix: ['x'] }]) {
      expect(() => new Store(options), String(options)).toThrow(InvalidOptionError);
    }
    const saver = new CairnSaver({ engine, kind: 'task', snapshotEvery: 10, leaseMs: 5_000, idleReleaseMs: 500, busyWaitMs: 100, writesWaitMs: 50 });
    expect(await saver.getTuple({ configurable: { thread_id: 'none' } })).toBeUndefined();
    expect(await new CairnStore({ engine }).get(['a'], 'k')).toBeNull();
    await engine.close();
  });
});
