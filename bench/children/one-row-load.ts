/**
 * @module bench/children/one-row-load
 *
 * Child process of `benchOneRowFloor`: read the single row holding a whole
 * thread's state and decode it, timing only that (statement prepare + read +
 * decode; the database is opened and its schema read before the clock starts).
 * Run in a fresh process so nothing is warm.
 *
 * Usage: node --import tsx bench/children/one-row-load.ts DB [MODULE EXPORT]
 * Prints `{"ms": <read+decode ms>, "count": <messages decoded>}`.
 */
import { isAbsolute, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import Database from 'better-sqlite3';

type Decode = (text: string) => { messages: unknown[] };

const [file, moduleSpec, exportName] = process.argv.slice(2);
if (!file) throw new Error('usage: one-row-load.ts DB [MODULE EXPORT]');

// Import the decoder before the clock starts: module loading is start-up, not
// load cost. Paths (absolute or ./relative to the repo root) become file URLs.
let decode: Decode = (text) => JSON.parse(text) as { messages: unknown[] };
if (moduleSpec && exportName) {
  const spec =
    isAbsolute(moduleSpec) || moduleSpec.startsWith('.') ? pathToFileURL(resolve(moduleSpec)).href : moduleSpec;
  const mod = (await import(spec)) as Record<string, unknown>;
  const fn = mod[exportName];
  if (typeof fn !== 'function') throw new Error(`${moduleSpec} has no function export ${exportName}`);
  decode = fn as Decode;
}

// Open the database before the clock, as every contender's child does: the
// constructor opens the file, and a first statement reads the schema (which
// better-sqlite3 otherwise does lazily inside the first prepare, i.e. inside
// the timed read). The load's own prepare stays inside the clock.
const db = new Database(file, { readonly: true });
db.prepare('SELECT count(*) FROM sqlite_schema').pluck().get();
const t0 = performance.now();
const row = db.prepare('SELECT body FROM one_row WHERE id = 1').get() as { body: string };
const state = decode(row.body);
const ms = performance.now() - t0;
db.close();
console.log(JSON.stringify({ ms, count: state.messages.length }));
