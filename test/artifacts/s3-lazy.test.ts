/** `cairn/s3` loads the AWS SDK only when a store is first used, like the SQL engines load their drivers. */
import { execFileSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { ensureBuilt } from './build.js';

const root = new URL('../..', import.meta.url).pathname;

describe('cairn/s3', () => {
  it('imports without loading @aws-sdk/client-s3, and loads it on first use', () => {
    ensureBuilt();
    const out = execFileSync(
      process.execPath,
      [
        '--input-type=module',
        '-e',
        `
        import { createRequire } from 'node:module';
        const { s3Artifacts } = await import('cairn/s3');
        const loaded = () => Object.keys(createRequire(import.meta.url).cache).some((k) => k.includes('@aws-sdk/client-s3'));
        const store = s3Artifacts({ bucket: 'no-such-bucket', client: { endpoint: 'http://127.0.0.1:9', region: 'us-east-1', forcePathStyle: true, maxAttempts: 1, credentials: { accessKeyId: 'x', secretAccessKey: 'x' } } });
        const before = loaded();
        const error = await store.head('k').catch((e) => e);
        console.log(JSON.stringify({ before, after: loaded(), code: error.code }));
        await store.close();
      `,
      ],
      { cwd: root, encoding: 'utf8' },
    );
    expect(JSON.parse(out)).toEqual({ before: false, after: true, code: 'ERR_ENGINE' });
  });

  it('rejects a bad bucket name, prefix or part size before anything is loaded', async () => {
    const { s3Artifacts } = await import('../../src/artifacts/s3/index.js');
    for (const options of [{ bucket: 'A' }, { bucket: 'ok-bucket', prefix: '../x/' }, { bucket: 'ok-bucket', prefix: 'no-slash' }, { bucket: 'ok-bucket', partSize: 1024 }]) {
      expect(() => s3Artifacts(options as never)).toThrow(expect.objectContaining({ code: 'ERR_INVALID_OPTION' }));
    }
  });
});
