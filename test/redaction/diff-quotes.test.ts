/**
 * A diff holds only the fields that differ between two positions, but one of them may
 * quote a field that does not (a draft repeating the customer's email, which a path
 * rule hides): `cairn diff` and the inspector's diff route hide the quoted value, as
 * `cairn show` does, in the root graph and in a child run's namespace.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { sqlite } from '../../src/engines/sqlite/index.js';
import { startInspector } from '../../src/inspector/index.js';
import { END, START, graph } from '../../src/runtime/builder.js';
import { field } from '../../src/state/fields.js';
import { defineState } from '../../src/state/schema.js';
import { cairn } from '../cli/run-cli.js';

const EMAIL = 'ana@example.com';
const Child = defineState({ fields: { contact: field.model(z.string(), { default: '' }), letter: field.model(z.string(), { default: '' }) } });
const State = defineState({
  fields: {
    customer: field.model(z.object({ name: z.string(), email: z.string() })),
    draft: field.model(z.string(), { default: '' }),
    letter: field.model(z.string(), { default: '' }),
  },
});
const child = graph(Child)
  .node('write', (s) => ({ letter: `to ${s.contact}` }))
  .edge(START, 'write')
  .edge('write', END);

let dir: string;
let db: string;
beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'cairn-diff-quotes-'));
  db = join(dir, 'cairn.db');
  const engine = sqlite(db);
  const app = graph(State)
    .node('draft', (s) => ({ draft: `Dear ${s.customer.name}, we write to ${s.customer.email}` }))
    .subgraph('letter', child, { input: (s) => ({ contact: s.customer.email }), output: (r) => ({ letter: r.letter }) })
    .edge(START, 'draft')
    .edge('draft', 'letter')
    .edge('letter', END)
    .compile({ engine, redact: { paths: ['customer.email', 'contact'] } });
  await app.run({ thread: 't1', input: { customer: { name: 'Ana', email: EMAIL } } });
  await engine.close();
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('a diff that quotes a hidden field it does not show', () => {
  it('cairn diff hides the quoted value, in text and --json, as cairn show does; --raw shows it', async () => {
    const shown = await cairn(['show', 't1', '--db', db, '--json']);
    expect(shown.code, shown.stderr).toBe(0);
    expect(shown.stdout).not.toContain(EMAIL);
    for (const args of [['diff', 't1', '0', '2', '--db', db], ['diff', 't1', '0', '2', '--db', db, '--json'], ['diff', 't1', '0', '1', '--ns', 'letter:0@1', '--db', db]]) {
      const run = await cairn(args);
      expect(run.code, run.stderr).toBe(0);
      expect(run.stdout, args.join(' ')).toContain('[redacted]');
      expect(run.stdout, args.join(' ')).not.toContain(EMAIL);
    }
    expect((await cairn(['diff', 't1', '0', '2', '--db', db, '--raw'])).stdout).toContain(EMAIL);
  });

  it("the inspector's diff route hides it too", async () => {
    const engine = sqlite(db, { readOnly: true });
    const inspector = await startInspector({ engine });
    try {
      const base = inspector.url.slice(0, inspector.url.indexOf('/?'));
      for (const query of ['from=0&to=2', 'from=0&to=1&ns=letter%3A0%401']) {
        const response = await fetch(`${base}/api/threads/t1/diff?${query}&token=${inspector.token}`);
        expect(response.status).toBe(200);
        const text = await response.text();
        expect(text, query).toContain('[redacted]');
        expect(text, query).not.toContain(EMAIL);
      }
    } finally {
      await inspector.close();
      await engine.close();
    }
  });
});
