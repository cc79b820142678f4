/**
 * A retention policy is checked whole before anything runs: an unknown key (of the
 * policy or of a rule), a status that is not a ThreadStatus, an age or count that is
 * not a number of 0 (1) or more is InvalidOptionError naming the rule and the value,
 * from applyRetention (dry run or not) and from collectArtifacts alike, and the
 * thread the rule was meant for is still there. A valid policy still runs.
 */
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { memoryArtifacts } from '../../src/artifacts/memory/index.js';
import { memory } from '../../src/engines/memory/index.js';
import { InvalidOptionError } from '../../src/errors.js';
import { checkRetentionPolicy, collectArtifacts } from '../../src/inspect/gc.js';
import { applyRetention } from '../../src/inspect/retention.js';
import { END, START, graph } from '../../src/runtime/builder.js';
import { field } from '../../src/state/fields.js';
import { defineState } from '../../src/state/schema.js';

const State = defineState({ fields: { n: field.model(z.number(), { default: 0 }) } });

async function setup() {
  const engine = memory();
  const app = graph(State)
    .node('a', (s) => ({ n: s.n + 1 }))
    .edge(START, 'a')
    .edge('a', END)
    .compile({ engine });
  await app.run({ thread: 'done' });
  return engine;
}

/** Policies refused, each with what the message must say. */
const REFUSED: [string, unknown, string][] = [
  ['a misspelt kind', { threds: [] }, 'unknown key "threds"'],
  ['a kind that is not a list', { threads: { status: 'completed' } }, '"threads" must be a list of rules'],
  ['a status that is not a ThreadStatus', { threads: [{ status: 'complete', olderThanMs: 0 }] }, 'threads[0]: unknown status "complete"'],
  ['a bogus status in a list', { threads: [{ olderThanMs: 0 }, { status: ['failed', 'bogus'], olderThanMs: 1 }] }, 'threads[1]: unknown status "bogus"'],
  ['an empty status list', { threads: [{ status: [], olderThanMs: 0 }] }, 'threads[0]: status is an empty list'],
  ['a misspelt rule key', { threads: [{ status: 'completed', olderThanMS: 0 }] }, 'threads[0]: unknown key "olderThanMS"'],
  ['a negative age', { threads: [{ olderThanMs: -1 }] }, 'threads[0]: olderThanMs must be a number of milliseconds (0 or more), got -1'],
  ['an age as text', { threads: [{ olderThanMs: '30d' }] }, 'threads[0]: olderThanMs must be a number of milliseconds (0 or more), got "30d"'],
  ['a malformed duration', { artifacts: [{ olderThan: 'soon' }] }, 'artifacts[0]: olderThan must be a duration'],
  ['a rule without an age', { threads: [{ status: 'completed' }] }, 'threads[0]: needs olderThanMs'],
  ['a zero keepLast', { positions: [{ keepLast: 0 }] }, 'positions[0]: keepLast must be a whole number of positions (1 or more), got 0'],
  ['a fractional keepLast', { positions: [{ keepLast: 2.5 }] }, 'positions[0]: keepLast must be a whole number of positions (1 or more), got 2.5'],
  ['a ledger flag that is not a boolean', { positions: [{ keepLast: 2, ledger: 'no' }] }, 'positions[0]: ledger must be true or false, got "no"'],
  ['a store rule key of another kind', { store: [{ namespace: ['cache'], status: 'completed', olderThanMs: 0 }] }, 'store[0]: unknown key "status"'],
  ['a tenant that is not a string', { ledger: [{ tenant: 7, olderThanMs: 0 }] }, 'ledger[0]: tenant must be a string or a list of strings, got 7'],
  ['a rule that is not an object', { threads: ['completed'] }, 'threads[0]: a rule is an object, got "completed"'],
];

describe('retention policies are checked whole before anything runs', () => {
  it.each(REFUSED)('%s is refused by applyRetention (dry run or not) and collectArtifacts; nothing is removed', async (_, policy, says) => {
    const engine = await setup();
    for (const dryRun of [true, false]) {
      const error = await applyRetention({ checkpointer: engine.checkpointer, ledger: engine.ledger, store: engine.store, policy: policy as never, dryRun }).catch((e: unknown) => e);
      expect(InvalidOptionError.is(error), String(error)).toBe(true);
      expect((error as Error).message).toContain(says);
    }
    const collected = await collectArtifacts({ checkpointer: engine.checkpointer, store: engine.store, artifacts: memoryArtifacts(), retention: policy as never, graceMs: 0 }).catch((e: unknown) => e);
    expect(InvalidOptionError.is(collected), String(collected)).toBe(true);
    expect((collected as Error).message).toContain(says);
    expect(() => checkRetentionPolicy(policy)).toThrow(says);
    expect(await engine.checkpointer.getThread('done')).not.toBeNull();
  });

  it('a valid policy runs as before: the completed thread goes', async () => {
    const engine = await setup();
    await new Promise((resolve) => setTimeout(resolve, 5));
    const report = await applyRetention({ checkpointer: engine.checkpointer, ledger: engine.ledger, store: engine.store, policy: { threads: [{ status: ['completed'], olderThan: '0s' }], positions: [{ keepLast: 1, ledger: true }], store: [{ namespace: ['cache'], olderThanMs: 0 }], ledger: [], artifacts: [] } });
    expect(report.threads.deleted).toEqual(['done']);
    expect(await engine.checkpointer.getThread('done')).toBeNull();
  });
});
