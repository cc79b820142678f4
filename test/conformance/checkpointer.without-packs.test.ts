/**
 * The Checkpointer conformance suite on an engine written before item packs: the memory
 * engine with `itemPacks` left out of its capabilities. It passes as it is (absent reads as
 * false: getItemPacks refuses with NotSupportedError, a commit's packs are not stored),
 * and an encrypted engine over it keeps no packs and loads from the rows.
 */
import { describe, expect, it } from 'vitest';
import { encrypted, envKey } from '../../src/crypto/index.js';
import type { Engine } from '../../src/contracts/engine.js';
import { memory } from '../../src/engines/memory/index.js';
import { checkpointerSuite } from '../../src/testing/checkpointer.suite.js';

function withoutPacks(): Engine {
  const engine = memory();
  const { itemPacks: _left, ...capabilities } = engine.checkpointer.capabilities;
  (engine.checkpointer as { capabilities: unknown }).capabilities = capabilities;
  return engine;
}

checkpointerSuite({ name: 'memory without itemPacks', create: withoutPacks });

describe('an encrypted engine over one without itemPacks', () => {
  it('seals no packs, and reads its items from the rows', async () => {
    process.env.CAIRN_TEST_MASTER_KEY ??= Buffer.alloc(32, 7).toString('base64');
    const inner = withoutPacks();
    const engine = encrypted(inner, { keys: envKey('CAIRN_TEST_MASTER_KEY') });
    const lease = await engine.checkpointer.acquireThread('t', { owner: { runId: 'r', pid: process.pid, host: 'h' }, leaseMs: 60_000, create: { kind: 'task', tenant: null, metadata: {} } });
    for (let seq = 0; seq < 64; seq++) {
      const position = { ns: '', seq, parent: seq === 0 ? null : seq - 1, segment: 0, step: seq, schemaVersion: 1, createdAt: 1, body: '{}', hash: seq.toString(16).padStart(64, '0') };
      await engine.checkpointer.commitStep(lease, { position, items: [{ field: 'm', index: 0, text: `"m${seq}"` }], status: 'running', expectedHead: seq === 0 ? null : seq - 1 });
    }
    expect(await engine.checkpointer.getItems('t', '', 'm', [{ from: 0, to: 63 }])).toEqual(Array.from({ length: 64 }, (_, seq) => `"m${seq}"`));
    await expect(inner.checkpointer.getItemPacks!('t', '', 'm', [{ from: 0, to: 63 }])).rejects.toMatchObject({ code: 'ERR_NOT_SUPPORTED' });
    await engine.close();
  });
});
