/**
 * Stored text a terminal would obey: a tool's error message holding escape sequences
 * (clear the screen, set the title or the clipboard through OSC, a carriage return that
 * writes over the line) is shown by `attempts` (and every command's human output) with
 * each control character written as its escape, `\u001b`, as --json writes it; line
 * breaks stay.
 */
import { join } from 'node:path';
import { z } from 'zod';
import { beforeAll, describe, expect, it } from 'vitest';
import { defineState, END, field, graph, START } from '../../src/index.js';
import { sqlite } from '../../src/engines/sqlite/index.js';
import { tempDir } from '../helpers/temp-dirs.js';
import { cairn } from './run-cli.js';

const db = join(tempDir('cairn-cli-terminal-'), 'cairn.db');
const HOSTILE = 'quota \u001b[2J\u001b]52;c;ZXZpbA==\u0007exceeded\rOK\nsee logs';

beforeAll(async () => {
  const engine = sqlite(db);
  const State = defineState({ fields: { n: field.model(z.number(), { default: 0 }) } });
  const app = graph(State)
    .node('call', () => {
      throw new Error(HOSTILE);
    })
    .edge(START, 'call')
    .edge('call', END)
    .compile({ engine });
  await app.run({ thread: 'tool-1' }).catch(() => undefined);
  await engine.close();
});

describe('stored control characters in human output', () => {
  it('are written as escapes, never sent to the terminal; --json escapes them as JSON does', async () => {
    const run = await cairn(['attempts', 'tool-1', '--db', db]);
    expect(run.code, run.stderr).toBe(0);
    expect(run.stdout).not.toMatch(/[\u0000-\u0009\u000b-\u001f]/);
    expect(run.stdout).toContain('quota \\u001b[2J\\u001b]52;c;ZXZpbA==\\u0007exceeded\\u000dOK');
    expect(run.stdout).toContain('see logs');
    const json = await cairn(['attempts', 'tool-1', '--db', db, '--json']);
    expect(JSON.stringify(JSON.parse(json.stdout))).toContain(JSON.stringify(HOSTILE).slice(1, -1));
  });
});
