/**
 * Reads refuse options that are not what they say, with InvalidOptionError, instead of
 * reading something else: a negative or non-integer history limit (SQLite would read
 * LIMIT -1 as no limit, a string as none), a seq given as a string or a fraction, a
 * replay whose `from` comes after its `to`, a key the read does not take (a misspelt
 * `ns` would read the root graph instead of the child run), no options object at all;
 * a thread id that is not a string is InvalidKeyError, as run() says of it.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import type { Engine } from '../../src/contracts/engine.js';
import { memory } from '../../src/engines/memory/index.js';
import { sqlite } from '../../src/engines/sqlite/index.js';
import { InvalidKeyError, InvalidOptionError } from '../../src/errors.js';
import { END, START, defineState, field, graph } from '../../src/index.js';

const dir = mkdtempSync(join(tmpdir(), 'cairn-read-options-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const State = defineState({ fields: { n: field.model(z.number(), { default: 0 }) } });
const counter = (engine: Engine) =>
  graph(State)
    .node('inc', async (s) => ({ n: s.n + 1 }))
    .edge(START, 'inc')
    .conditionalEdge('inc', (s) => (s.n < 3 ? 'inc' : END))
    .compile({ engine });

describe.each([
  ['memory', () => memory()],
  ['sqlite', () => sqlite(join(dir, `${Math.random()}.db`))],
])('read options on %s', (_name, make) => {
  it('history: a negative, fractional or non-number limit or beforeSeq is InvalidOptionError', async () => {
    const engine = make();
    const app = counter(engine);
    await app.run({ thread: 't' });
    expect(await app.history({ thread: 't', limit: 2 })).toHaveLength(2);
    expect(await app.history({ thread: 't', limit: 0 })).toHaveLength(0);
    for (const limit of [-1, 1.5, 'abc' as unknown as number, Number.NaN]) await expect(app.history({ thread: 't', limit })).rejects.toThrow(InvalidOptionError);
    for (const beforeSeq of [-1, 0.5, '2' as unknown as number]) await expect(app.history({ thread: 't', beforeSeq })).rejects.toThrow(InvalidOptionError);
    await expect(engine.checkpointer.listPositions('t', '', { limit: -1 })).rejects.toThrow(InvalidOptionError);
    await engine.close();
  });

  it('stateAt: a seq that is not an integer, 0 or more, is InvalidOptionError, not "no position"', async () => {
    const engine = make();
    const app = counter(engine);
    await app.run({ thread: 't' });
    expect((await app.stateAt({ thread: 't', seq: 2 })).n).toBe(2);
    for (const seq of ['2' as unknown as number, -1, 1.5]) await expect(app.stateAt({ thread: 't', seq })).rejects.toThrow(InvalidOptionError);
    await engine.close();
  });

  it('replay: from after to, or a seq that is not one, is InvalidOptionError', async () => {
    const engine = make();
    const app = counter(engine);
    await app.run({ thread: 't' });
    expect((await app.replay({ thread: 't', from: 1, to: 3 })).steps.length).toBeGreaterThan(0);
    await expect(app.replay({ thread: 't', from: 3, to: 1 })).rejects.toThrow(/from \(3\) is after to \(1\)/);
    await expect(app.replay({ thread: 't', from: -1 })).rejects.toThrow(InvalidOptionError);
    await expect(app.replay({ thread: 't', from: '1' as unknown as number })).rejects.toThrow(InvalidOptionError);
    await engine.close();
  });

  it('a key a read does not take is InvalidOptionError naming it, not ignored: a misspelt ns, seq or to, an ns given to replay', async () => {
    const engine = make();
    const app = counter(engine);
    await app.run({ thread: 't' });
    const misspelt: [string, () => Promise<unknown>, string][] = [
      ['history', () => app.history({ thread: 't', limt: 1 } as never), 'limt'],
      ['history', () => app.history({ thread: 't', namespace: 'research:0@1' } as never), 'namespace'],
      ['stateAt', () => app.stateAt({ thread: 't', seq: 1, sq: 2 } as never), 'sq'],
      ['getState', () => app.getState({ thread: 't', nss: 'research:0@1' } as never), 'nss'],
      ['replay', () => app.replay({ thread: 't', from: 0, too: 1 } as never), 'too'],
      ['replay', () => app.replay({ thread: 't', from: 0, ns: 'research:0@1' } as never), 'ns'],
      ['attempts', () => app.attempts({ thread: 't', attempt: 1 } as never), 'attempt'],
      ['verify', () => app.verify({ thread: 't', deep: true } as never), 'deep'],
      ['getThread', () => app.getThread({ thread: 't', ns: '' } as never), 'ns'],
    ];
    for (const [call, read, key] of misspelt) {
      const error = await read().then(() => undefined, (e: unknown) => e);
      expect(InvalidOptionError.is(error), `${call} with ${key}`).toBe(true);
      expect((error as Error).message).toContain(`${call}: unknown option "${key}"`);
    }
    // The options each read does take still work.
    expect(await app.history({ thread: 't', ns: '', beforeSeq: 3, limit: 1 })).toHaveLength(1);
    expect((await app.stateAt({ thread: 't', ns: '', seq: 1 })).n).toBe(1);
    expect((await app.getState({ thread: 't', ns: '' })).n).toBe(3);
    expect((await app.replay({ thread: 't', from: 0, to: 2 })).steps).toHaveLength(2);
    await engine.close();
  });

  it('a read given no options object is InvalidOptionError, not a TypeError; a thread id that is not a string is InvalidKeyError', async () => {
    const engine = make();
    const app = counter(engine);
    await app.run({ thread: 't' });
    const calls = ['history', 'stateAt', 'getState', 'replay', 'attempts', 'verify', 'getThread'] as const;
    for (const call of calls) {
      for (const options of [undefined, null, 't']) {
        const error = await (app[call] as (o: unknown) => Promise<unknown>).call(app, options).then(() => undefined, (e: unknown) => e);
        expect(InvalidOptionError.is(error), `${call}(${String(options)})`).toBe(true);
      }
      for (const thread of [5, undefined, '']) {
        const rest = call === 'stateAt' ? { seq: 0 } : call === 'replay' ? { from: 0 } : {};
        const error = await (app[call] as (o: unknown) => Promise<unknown>).call(app, { thread, ...rest }).then(
          () => undefined,
          (e: unknown) => e,
        );
        expect(InvalidKeyError.is(error), `${call}({ thread: ${String(thread)} })`).toBe(true);
      }
    }
    await engine.close();
  });
});
