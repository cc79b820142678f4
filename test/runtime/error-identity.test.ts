/**
 * What makes an error cairn's: the brand its constructor sets, not an `ERR_` code.
 * Node.js's own errors have `ERR_` codes too (`ERR_INVALID_URL`, `ERR_INVALID_ARG_TYPE`,
 * even `ERR_ACCESS_DENIED`); a node that fails with one failed, as with any error of
 * its own: the default policy retries it and the run ends with NodeFailedError. A
 * second copy of cairn in the process (a bundling accident) still recognises cairn's
 * errors, and a redacted error is still the error it was.
 */
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { AccessDeniedError, CairnError, InvalidOptionError, NodeFailedError, ThreadBusyError, VersionConflictError } from '../../src/errors.js';
import { defineState } from '../../src/state/schema.js';
import { field } from '../../src/state/fields.js';
import { END, START, graph } from '../../src/runtime/builder.js';
import { DEFAULT_RETRY } from '../../src/runtime/retry.js';
import { redactError } from '../../src/runtime/redacted-errors.js';
import { Redactor, redactionRules } from '../../src/internal/redaction.js';
import { memory } from '../../src/engines/memory/index.js';
import { caught } from './engines.js';

/** An error Node.js itself throws, with its `ERR_` code. */
function nodeError(): Error & { code: string } {
  try {
    new URL('not a url');
  } catch (error) {
    return error as Error & { code: string };
  }
  throw new Error('new URL accepted "not a url"');
}

/** What an error rebuilt from JSON looks like: an Error with a cairn code and nothing else of cairn's. */
function rebuilt(code: string): Error & { code: string } {
  return Object.assign(new Error('rebuilt'), { code });
}

/**
 * src/errors.ts loaded a second time, as its own module (the query makes it another
 * module to the loader): what a second copy of cairn bundled into one process gives.
 */
async function secondCopy(): Promise<typeof import('../../src/errors.js')> {
  const specifier = '../../src/errors.js?second-copy';
  return (await import(/* @vite-ignore */ specifier)) as typeof import('../../src/errors.js');
}

describe('a cairn error is known by its brand', () => {
  it("Node.js's own ERR_ errors are not cairn errors", () => {
    const error = nodeError();
    expect(error.code).toBe('ERR_INVALID_URL');
    expect(CairnError.is(error)).toBe(false);
    // Node's permission model throws ERR_ACCESS_DENIED, one of cairn's codes too.
    expect(AccessDeniedError.is(rebuilt('ERR_ACCESS_DENIED'))).toBe(false);
  });

  it('an Error that only carries a cairn code is not that cairn error: compare err.code for those', () => {
    const error = rebuilt('ERR_THREAD_BUSY');
    expect(ThreadBusyError.is(error)).toBe(false);
    expect(CairnError.is(error)).toBe(false);
    expect(error.code).toBe(ThreadBusyError.code);
    expect(ThreadBusyError.is({ code: 'ERR_THREAD_BUSY' })).toBe(false);
  });

  it('a cairn error is its class and CairnError, not another class with another code', () => {
    const error = new ThreadBusyError('t', 'owner-1');
    expect(ThreadBusyError.is(error)).toBe(true);
    expect(CairnError.is(error)).toBe(true);
    expect(VersionConflictError.is(error)).toBe(false);
  });

  it('the brand stays out of what an error shows: keys, JSON, deep equality', () => {
    const error = new InvalidOptionError('bad');
    expect(Object.getOwnPropertySymbols(error).every((s) => !Object.getOwnPropertyDescriptor(error, s)!.enumerable)).toBe(true);
    expect(JSON.stringify(error)).not.toContain('cairn.error');
  });

  it("another copy of cairn in the process recognises this copy's errors, and this copy its", async () => {
    const other = await secondCopy();
    expect(other.ThreadBusyError).not.toBe(ThreadBusyError);
    const theirs = new other.ThreadBusyError('t', 'owner-1');
    expect(theirs).not.toBeInstanceOf(ThreadBusyError);
    expect(ThreadBusyError.is(theirs)).toBe(true);
    expect(CairnError.is(theirs)).toBe(true);
    expect(VersionConflictError.is(theirs)).toBe(false);
    const ours = new ThreadBusyError('t', 'owner-1');
    expect(other.ThreadBusyError.is(ours)).toBe(true);
    expect(other.CairnError.is(ours)).toBe(true);
    expect(other.CairnError.is(nodeError())).toBe(false);
  });

  it('a redacted cairn error is still its class, of either copy', async () => {
    const redactor = new Redactor(redactionRules({ patterns: [/secret-\w+/] }));
    const error = new InvalidOptionError('the value secret-42 is wrong');
    expect(redactError(error, redactor)).toBe(error);
    expect(error.message).not.toContain('secret-42');
    expect(InvalidOptionError.is(error)).toBe(true);
    const other = await secondCopy();
    const theirs = new other.InvalidOptionError('the value secret-43 is wrong');
    redactError(theirs, redactor);
    expect(theirs.message).not.toContain('secret-43');
    expect(InvalidOptionError.is(theirs)).toBe(true);
  });
});

describe("a node that fails with Node.js's own ERR_ error", () => {
  it('the default policy retries it (it retries every error but cairn’s own)', () => {
    expect(DEFAULT_RETRY.retryOn(nodeError())).toBe(true);
    expect(DEFAULT_RETRY.retryOn(new InvalidOptionError('bad'))).toBe(false);
  });

  it('is retried under the default policy and the run ends with NodeFailedError, the Node error its cause', async () => {
    const State = defineState({ fields: { value: field.model(z.string(), { default: '' }) } });
    let calls = 0;
    const app = graph(State)
      .node('parse', () => {
        calls++;
        return { value: new URL('not a url').href };
      })
      .edge(START, 'parse')
      .edge('parse', END)
      .compile({ engine: memory(), retry: { initialDelayMs: 0 } });
    const error = await caught(() => app.run({ thread: 't' }));
    expect(calls).toBe(DEFAULT_RETRY.maxAttempts);
    expect(NodeFailedError.is(error)).toBe(true);
    expect((error as NodeFailedError).node).toBe('parse');
    expect((error as NodeFailedError).attempts).toBe(DEFAULT_RETRY.maxAttempts);
    expect((error.cause as { code?: string }).code).toBe('ERR_INVALID_URL');
    const thread = (await app.getThread({ thread: 't' }))!;
    expect(thread.status).toBe('failed');
    expect(thread.lastError).toMatchObject({ code: 'ERR_NODE_FAILED' });
  });
});
