/**
 * @module langgraph/adapter-options
 * What `new CairnSaver(options)` and `new CairnStore(options)` check first: one
 * options object holding a cairn engine, and only the keys they take. `new
 * CairnSaver(engine)` (the engine itself, not `{ engine }`) used to fail with a
 * TypeError deep in the constructor; a misspelt `busyWait` waited the default.
 */
import { InvalidOptionError } from '../errors.js';
import { unknownOption } from '../internal/option-keys.js';

export function checkAdapterOptions(call: 'CairnSaver' | 'CairnStore', options: unknown, known: readonly string[]): void {
  const place = { engine: 'langgraph' };
  const engine = (options as { engine?: { checkpointer?: unknown; store?: unknown } } | null | undefined)?.engine;
  if (options === null || typeof options !== 'object' || !engine || typeof engine !== 'object' || !engine.checkpointer || !engine.store) {
    const given = (options as { checkpointer?: unknown } | null)?.checkpointer ? 'an engine itself' : String(options);
    throw new InvalidOptionError(`new ${call}({ engine }) takes an options object holding a cairn engine (sqlite(file), postgres(url), memory()), not ${given}.`, { place });
  }
  const unknown = unknownOption(call, options, known);
  if (unknown) throw new InvalidOptionError(unknown, { place });
}
