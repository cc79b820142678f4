/**
 * `artifactRefSchema` (exported from `cairn`): a Standard Schema v1 of ArtifactRef,
 * with no schema library. Refs from an artifact store pass unchanged; anything else
 * is an issue naming the key that is wrong. As a state field's schema, a node writing
 * a ref commits it, and a node writing a broken one fails with StateValidationError.
 */
import { describe, expect, it } from 'vitest';
import { artifactRefSchema, defineState, END, field, graph, START } from '../../src/index.js';
import { memory, memoryArtifacts } from '../../src/engines/memory/index.js';
import type { ArtifactRef } from '../../src/contracts/artifact-store.js';

const digest = 'a'.repeat(64);
const good: ArtifactRef = { id: `sha256:${digest}`, sha256: digest, media_type: 'text/plain', size_bytes: 5 };

function validate(value: unknown) {
  const result = artifactRefSchema['~standard'].validate(value);
  if (result instanceof Promise) throw new Error('artifactRefSchema validates synchronously');
  return result;
}

const paths = (value: unknown) => (validate(value).issues ?? []).map((i) => i.path?.join('.') ?? '');

describe('artifactRefSchema', () => {
  it('is a Standard Schema v1 by cairn, and passes a valid ref through unchanged', () => {
    expect(artifactRefSchema['~standard']).toMatchObject({ version: 1, vendor: 'cairn' });
    expect(validate(good)).toEqual({ value: good });
    const named = { id: 'tenant:acme/key:reports/q1.pdf', sha256: digest, media_type: 'application/pdf', size_bytes: 0 };
    expect(validate(named)).toEqual({ value: named });
  });

  it('names each wrong key: id, sha256 (64 lowercase hex), media_type, size_bytes (non-negative safe integer)', () => {
    expect(paths({ ...good, id: 'blob:1' })).toEqual(['id']);
    expect(paths({ ...good, id: `sha256:${'b'.repeat(64)}` })).toEqual(['id']);
    expect(paths({ ...good, id: 'key:x', sha256: 'A'.repeat(64) })).toEqual(['sha256']);
    expect(paths({ ...good, id: 'key:x', sha256: 'a'.repeat(63) })).toEqual(['sha256']);
    expect(paths({ ...good, media_type: 'text' })).toEqual(['media_type']);
    expect(paths({ ...good, size_bytes: -1 })).toEqual(['size_bytes']);
    expect(paths({ ...good, size_bytes: 1.5 })).toEqual(['size_bytes']);
    expect(paths({ ...good, size_bytes: 2 ** 53 })).toEqual(['size_bytes']);
    expect(paths({ ...good, size_bytes: '5' })).toEqual(['size_bytes']);
    expect(paths({})).toEqual(['id', 'sha256', 'media_type', 'size_bytes']);
    for (const value of [null, 'sha256:x', [good], 5]) expect(validate(value).issues).toHaveLength(1);
  });

  it('as a state field: a ref from ctx.artifacts.put commits; a broken one fails with StateValidationError naming the field', async () => {
    const State = defineState({ fields: { doc: field.model(artifactRefSchema) } });
    const engine = memory();
    const artifacts = memoryArtifacts();
    const app = graph(State)
      .node('write', async (_s, ctx) => ({ doc: await ctx.artifacts.put('hello', { mediaType: 'text/plain' }) }))
      .edge(START, 'write')
      .edge('write', END)
      .compile({ engine, artifacts });
    const result = await app.run({ thread: 't1' });
    expect(result.status).toBe('completed');
    expect(result.state.doc).toMatchObject({ media_type: 'text/plain', size_bytes: 5 });
    expect(await artifacts.get(result.state.doc)).toEqual(new TextEncoder().encode('hello'));

    const broken = graph(State)
      .node('write', () => ({ doc: { ...good, sha256: 'nope' } }))
      .edge(START, 'write')
      .edge('write', END)
      .compile({ engine, artifacts, retry: { maxAttempts: 1 } });
    await expect(broken.run({ thread: 't2' })).rejects.toMatchObject({ code: 'ERR_STATE_VALIDATION', field: 'doc', message: expect.stringContaining('sha256') });
    await engine.close();
  });
});
