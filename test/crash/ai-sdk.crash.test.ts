/**
 * An AI SDK agent (streamText with tools and stopWhen, the model wrapped by
 * cairn/ai-sdk) killed with SIGKILL in the middle of its last model stream, in a real
 * process on a SQLite file, then resumed by a new process: the finished model calls,
 * the tool result and the effect are served (none is made again), the call cut
 * mid-stream is made again, the answer is whole and the chain verifies. Calls are
 * counted across the processes in a log file the fixture appends to. Killed between
 * the effect tool's run and its outcome (crash point after-effect), the next process
 * probes, finds the notification, and sends none again.
 * The processes run the BUILT package (dist/): `npm test` builds first.
 */
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { sqlite } from '../../dist/engines/sqlite/index.js';
import { verifyThread } from '../../dist/inspect/index.js';
import { runFixture } from './crash-setup.js';
import { tempDir } from '../helpers/temp-dirs.js';

const FIXTURE = fileURLToPath(new URL('../fixtures/ai-agent-process.mjs', import.meta.url));
const ANSWER = 'The lamp is in stock and ops were told about it today.';

function calls(file: string): string[] {
  return existsSync(file) ? readFileSync(file, 'utf8').split('\n').filter(Boolean) : [];
}

describe('an AI SDK agent killed mid-stream', () => {
  it('resumes mid-loop in a new process: finished model calls, the tool and the effect are not repeated; the cut stream is made again', async () => {
    const dir = tempDir('cairn-crash-ai-sdk-');
    const db = join(dir, 'cairn.db');
    const log = join(dir, 'calls.log');

    const killed = await runFixture(FIXTURE, [db, 'agent_1', log, 'kill']);
    expect(killed.signal).toBe('SIGKILL');
    expect(killed.lines.filter((l) => l.type === 'delta').map((l) => l.text)).toEqual(['The ', 'lamp ', 'is ']);
    expect(calls(log)).toEqual(['model:lookup', 'tool:lookup', 'model:notify', 'effect:notify notify:ops', 'model:answer']);
    const engine = sqlite(db);
    try {
      // What the dead process left: two model streams, the tool result and the effect; nothing of the cut stream.
      const left = (await engine.ledger.list('agent_1')).sort((a, b) => a.call - b.call);
      expect(left.map((e) => [e.kind, e.name, e.meta?.kind ?? null, e.status])).toEqual([
        ['record', 'ai.stream', 'model', 'done'],
        ['record', 'tool:lookup', 'tool', 'done'],
        ['record', 'ai.stream', 'model', 'done'],
        ['effect', 'notify', null, 'done'],
      ]);
    } finally {
      await engine.close();
    }

    const resumed = await runFixture(FIXTURE, [db, 'agent_1', log, 'run']);
    expect(resumed.stderr).toBe('');
    expect(resumed.exitCode).toBe(0);
    expect(resumed.lines.at(-1)).toMatchObject({ type: 'result', status: 'completed', state: { reply: ANSWER, steps: 3 } });
    // The resumed process streamed the whole answer again, from a new call.
    expect(resumed.lines.filter((l) => l.type === 'delta').map((l) => l.text).join('')).toBe(ANSWER);
    expect(calls(log)).toEqual(['model:lookup', 'tool:lookup', 'model:notify', 'effect:notify notify:ops', 'model:answer', 'model:answer']);

    const after = sqlite(db);
    try {
      const entries = (await after.ledger.list('agent_1')).sort((a, b) => a.call - b.call);
      expect(entries.map((e) => e.name)).toEqual(['ai.stream', 'tool:lookup', 'ai.stream', 'notify', 'ai.stream']);
      expect(entries.at(-1)!.meta).toMatchObject({ kind: 'model', model: 'mock-agent', provider: 'mock-provider', usage: { inputTokens: 40, outputTokens: 12 } });
      expect((await verifyThread(after.checkpointer, 'agent_1')).ok).toBe(true);
    } finally {
      await after.close();
    }
  });

  it('killed after the effect tool ran but before its outcome was recorded: the next process probes, finds it, and notifies once', async () => {
    const dir = tempDir('cairn-crash-ai-sdk-effect-');
    const db = join(dir, 'cairn.db');
    const log = join(dir, 'calls.log');

    const killed = await runFixture(FIXTURE, [db, 'agent_2', log, 'run'], 'after-effect:agent');
    expect(killed.signal).toBe('SIGKILL');
    expect(calls(log)).toEqual(['model:lookup', 'tool:lookup', 'model:notify', 'effect:notify notify:ops']);
    const engine = sqlite(db);
    try {
      expect(await engine.ledger.get('agent_2', 'notify:ops')).toMatchObject({ kind: 'effect', status: 'intent' });
    } finally {
      await engine.close();
    }

    const resumed = await runFixture(FIXTURE, [db, 'agent_2', log, 'run']);
    expect(resumed.stderr).toBe('');
    expect(resumed.lines.at(-1)).toMatchObject({ type: 'result', status: 'completed', state: { reply: ANSWER, steps: 3 } });
    expect(calls(log)).toEqual(['model:lookup', 'tool:lookup', 'model:notify', 'effect:notify notify:ops', 'model:answer']);
    const after = sqlite(db);
    try {
      expect(await after.ledger.get('agent_2', 'notify:ops')).toMatchObject({ status: 'done', outcome: expect.stringContaining('ops') });
      expect((await verifyThread(after.checkpointer, 'agent_2')).ok).toBe(true);
    } finally {
      await after.close();
    }
  });
});
