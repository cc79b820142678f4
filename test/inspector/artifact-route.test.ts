/**
 * The inspector's artifact route, in-process over the memory engine and a real fs
 * artifact store: only text, JSON and raster images are served inline, with a
 * content-type of the server's choosing; HTML, SVG and anything else go out as
 * `application/octet-stream` attachments; every answer has a sandboxing CSP; an id
 * the state does not hold is 404 (a caller cannot name bytes the thread does not
 * refer to); damaged bytes are 409 with no byte sent; without `--artifacts` it says
 * how to start the inspector; a HEAD answers the headers only. Under a graph's redaction
 * rules, text and JSON artifacts are served (and exported) redacted, binary ones as
 * stored, and `--raw` serves the stored bytes.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { fsArtifacts } from '../../src/artifacts/fs/index.js';
import type { ArtifactStore } from '../../src/contracts/artifact-store.js';
import type { Engine } from '../../src/contracts/engine.js';
import { memory } from '../../src/engines/memory/index.js';
import { exportThreads } from '../../src/inspect/transfer.js';
import { downloadName, servedType } from '../../src/inspector/artifact-route.js';
import { startInspector, type Inspector } from '../../src/inspector/index.js';
import { END, START, graph } from '../../src/runtime/builder.js';
import { field } from '../../src/state/fields.js';
import { defineState } from '../../src/state/schema.js';
import { corruptFsBlob } from './views-fixture.js';

const Ref = z.object({ id: z.string(), sha256: z.string(), media_type: z.string(), size_bytes: z.number() });
const Files = defineState({ fields: { files: field.model(z.array(Ref), { default: [] }) } });

const FILES: [string, string, string][] = [
  ['note.txt', 'text/plain', 'hello'],
  ['data.json', 'application/json', '{"a":1}'],
  ['page.html', 'text/html', '<script>alert(1)</script>'],
  ['pic.svg', 'image/svg+xml', '<svg xmlns="http://www.w3.org/2000/svg"><script>alert(1)</script></svg>'],
  ['blob.bin', 'application/x-evil', 'MZ'],
  ['broken.txt', 'text/plain', 'will be damaged'],
  ['gone.txt', 'text/plain', 'will be deleted'],
];

let dir: string;
let engine: Engine;
let artifacts: ArtifactStore;
let inspector: Inspector;
let bare: Inspector;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'cairn-artifact-route-'));
  engine = memory();
  artifacts = fsArtifacts(join(dir, 'artifacts'));
  await graph(Files)
    .node('write', async (_s, ctx) => ({ files: await Promise.all(FILES.map(([name, mediaType, body]) => ctx.artifacts.putNamed(name, body, { mediaType }))) }))
    .edge(START, 'write')
    .edge('write', END)
    .compile({ engine, artifacts })
    .run({ thread: 't', input: {} });
  const broken = (await artifacts.head('broken.txt'))!;
  corruptFsBlob(join(dir, 'artifacts'), broken.sha256);
  await artifacts.delete((await artifacts.head('gone.txt'))!);
  inspector = await startInspector({ engine, artifacts, uiDir: join(dir, 'no-ui') });
  bare = await startInspector({ engine, uiDir: join(dir, 'no-ui') });
});

afterAll(async () => {
  await inspector?.close();
  await bare?.close();
  await engine?.close();
  rmSync(dir, { recursive: true, force: true });
});

const get = (server: Inspector, id: string, extra = '', method = 'GET') => fetch(`http://127.0.0.1:${server.port}/api/threads/t/artifact?id=${encodeURIComponent(id)}${extra}&token=${server.token}`, { method });

describe('the artifact route', () => {
  it('serves text and JSON inline with its own content-type, and the bytes', async () => {
    const text = await get(inspector, 'key:note.txt');
    expect(text.status).toBe(200);
    expect(text.headers.get('content-type')).toBe('text/plain; charset=utf-8');
    expect(text.headers.get('content-disposition')).toBe('inline; filename="note.txt"');
    expect(text.headers.get('content-security-policy')).toContain('sandbox');
    expect(text.headers.get('x-content-type-options')).toBe('nosniff');
    expect(await text.text()).toBe('hello');
    const json = await get(inspector, 'key:data.json');
    expect(json.headers.get('content-type')).toBe('application/json; charset=utf-8');
    expect(await json.text()).toBe('{"a":1}');
  });

  it('sends HTML, SVG and unknown types as octet-stream attachments, never with their own type', async () => {
    for (const id of ['key:page.html', 'key:pic.svg', 'key:blob.bin']) {
      const response = await get(inspector, id);
      expect(response.status, id).toBe(200);
      expect(response.headers.get('content-type'), id).toBe('application/octet-stream');
      expect(response.headers.get('content-disposition'), id).toMatch(/^attachment; filename="[a-z]+\.[a-z]+"$/);
      await response.arrayBuffer();
    }
    expect(servedType('TEXT/HTML; charset=utf-8')).toEqual({ inline: false, contentType: 'application/octet-stream' });
    expect(servedType('image/png')).toEqual({ inline: true, contentType: 'image/png' });
    expect(servedType('application/ld+json')).toEqual({ inline: true, contentType: 'application/json; charset=utf-8' });
    expect(downloadName({ id: 'key:a/b/"evil"\r\n.txt', sha256: '0'.repeat(64), media_type: 'text/plain', size_bytes: 1 })).toBe('_evil___.txt');
  });

  it('answers 404 for an id the state does not hold or bytes the store lost, 409 with no bytes for damaged ones, and asks for --artifacts without a store', async () => {
    const unknown = await get(inspector, 'key:elsewhere.txt');
    expect(unknown.status).toBe(404);
    expect(((await unknown.json()) as { error: { code: string } }).error.code).toBe('ERR_ARTIFACT_NOT_FOUND');
    const broken = await get(inspector, 'key:broken.txt');
    expect(broken.status).toBe(409);
    expect(broken.headers.get('content-type')).toBe('application/json; charset=utf-8');
    expect(((await broken.json()) as { error: { code: string } }).error.code).toBe('ERR_ARTIFACT_INTEGRITY');
    // The state refers to it, the store no longer has it: missing.
    const gone = await get(inspector, 'key:gone.txt');
    expect(gone.status).toBe(404);
    expect(((await gone.json()) as { error: { code: string } }).error.code).toBe('ERR_ARTIFACT_NOT_FOUND');
    const none = await get(bare, 'key:note.txt');
    expect(none.status).toBe(404);
    const body = (await none.json()) as { error: { code: string; message: string } };
    expect(body.error.code).toBe('ERR_NO_ARTIFACT_STORE');
    expect(body.error.message).toContain('--artifacts');
  });

  it('answers a HEAD with the headers only, and rejects a bad seq', async () => {
    const head = await get(inspector, 'key:note.txt', '', 'HEAD');
    expect(head.status).toBe(200);
    expect(head.headers.get('content-length')).toBe('5');
    expect((await head.arrayBuffer()).byteLength).toBe(0);
    expect((await get(inspector, 'key:note.txt', '&seq=x')).status).toBe(400);
    expect((await get(inspector, 'key:note.txt', '&seq=7')).status).toBe(404);
  });
});

describe('the artifact route under redaction rules', () => {
  const Secret = defineState({ fields: { owner: field.model(z.string()), files: field.model(z.array(Ref), { default: [] }) } });
  const NOTES: [string, string, string][] = [
    ['secret.txt', 'text/plain', 'key sk-abcdefgh for Jane Roe'],
    ['secret.json', 'application/json', '{"token":"sk-12345678","owner":"Jane Roe"}'],
    ['secret.csv', 'text/csv', 'token\nsk-abcdefgh\n'],
    ['secret.png', 'image/png', 'PNGsk-abcdefgh'],
  ];
  let redacting: Inspector;
  let raw: Inspector;
  const fetchNote = (server: Inspector, name: string, extra = '') => fetch(`http://127.0.0.1:${server.port}/api/threads/s/artifact?id=${encodeURIComponent(`key:${name}`)}${extra}&token=${server.token}`);

  beforeAll(async () => {
    await graph(Secret)
      .node('write', async (_s, ctx) => ({ files: await Promise.all(NOTES.map(([name, mediaType, body]) => ctx.artifacts.putNamed(name, body, { mediaType }))) }))
      .edge(START, 'write')
      .edge('write', END)
      .compile({ engine, artifacts, name: 'secret-notes', redact: { paths: ['owner'], patterns: [/sk-[a-z0-9]{8}/] } })
      .run({ thread: 's', input: { owner: 'Jane Roe' } });
    redacting = await startInspector({ engine, artifacts, uiDir: join(dir, 'no-ui') });
    raw = await startInspector({ engine, artifacts, uiDir: join(dir, 'no-ui'), redaction: { raw: true } });
  });

  afterAll(async () => {
    await redacting?.close();
    await raw?.close();
  });

  it('hides the patterns and the values path rules hide in text and JSON, inline and downloaded, and says so', async () => {
    for (const [name, extra] of [['secret.txt', ''], ['secret.json', ''], ['secret.csv', ''], ['secret.txt', '&download=1']] as const) {
      const response = await fetchNote(redacting, name, extra);
      expect(response.status).toBe(200);
      const text = await response.text();
      expect(text, name).not.toContain('sk-');
      expect(text, name).toContain('[redacted]');
      expect(response.headers.get('x-cairn-redacted')).toBe('true');
      expect(Number(response.headers.get('content-length'))).toBe(Buffer.byteLength(text));
    }
    expect(await (await fetchNote(redacting, 'secret.txt')).text()).not.toContain('Jane Roe');
    expect(await (await fetchNote(redacting, 'secret.json')).text()).not.toContain('Jane Roe');
  });

  it('a redacted export writes text artifacts through the same rules, binary ones as stored; a raw export the stored bytes', async () => {
    const bytesOf = async (raw: boolean) => {
      const out = new Map<string, { redacted: boolean; bytes: string }>();
      for await (const record of exportThreads(engine, ['s'], { artifacts, raw })) {
        if (record.type === 'artifact') out.set(record.ref.id, { redacted: record.redacted === true, bytes: '' });
        if (record.type === 'artifact-chunk') out.get(record.id)!.bytes += Buffer.from(record.data, 'base64').toString();
      }
      return out;
    };
    const redactedExport = await bytesOf(false);
    for (const name of ['secret.txt', 'secret.json', 'secret.csv']) {
      const { redacted, bytes } = redactedExport.get(`key:${name}`)!;
      expect(redacted, name).toBe(true);
      expect(bytes, name).not.toContain('sk-');
      expect(bytes, name).not.toContain('Jane Roe');
    }
    expect(redactedExport.get('key:secret.png')).toEqual({ redacted: false, bytes: 'PNGsk-abcdefgh' });
    expect((await bytesOf(true)).get('key:secret.txt')).toEqual({ redacted: false, bytes: 'key sk-abcdefgh for Jane Roe' });
  });

  it('serves the stored bytes with --raw, and binary types as stored', async () => {
    const stored = await fetchNote(raw, 'secret.txt');
    expect(await stored.text()).toBe('key sk-abcdefgh for Jane Roe');
    expect(stored.headers.get('x-cairn-redacted')).toBeNull();
    const image = await fetchNote(redacting, 'secret.png');
    expect(Buffer.from(await image.arrayBuffer()).toString()).toBe('PNGsk-abcdefgh');
    // A text artifact nothing matches goes out unchanged and unmarked.
    const plain = await get(redacting, 'key:note.txt');
    expect(await plain.text()).toBe('hello');
    expect(plain.headers.get('x-cairn-redacted')).toBeNull();
  });
});
