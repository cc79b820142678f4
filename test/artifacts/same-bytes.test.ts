/**
 * A content-addressed put of bytes already stored under another media type: the same
 * artifact (one id, stored once), and a ref carrying the media type the put asked for,
 * since what reads the ref goes by it. storeValue of a string and of a value can give
 * the very same bytes; loadValue must give each back as it was stored.
 */
import { describe, expect, it } from 'vitest';
import { loadValue, storeValue, VALUE_MEDIA_TYPE } from '../../src/artifacts/helpers.js';
import { memoryArtifacts } from '../../src/artifacts/memory/index.js';

describe('the same bytes stored as two media types', () => {
  it('storeValue of a JSON text and of the value it spells: one artifact, each ref read back as what was stored', async () => {
    const store = memoryArtifacts();
    const text = await storeValue(store, '{"a":1}');
    const value = await storeValue(store, { a: 1 });
    // The same bytes: the case this is about.
    expect([value.id, value.sha256, value.size_bytes]).toEqual([text.id, text.sha256, text.size_bytes]);
    expect([text.media_type, value.media_type]).toEqual(['text/plain; charset=utf-8', VALUE_MEDIA_TYPE]);
    expect(await loadValue(store, text)).toBe('{"a":1}');
    expect(await loadValue(store, value)).toEqual({ a: 1 });
    expect((await store.list()).items).toHaveLength(1);
  });
});
