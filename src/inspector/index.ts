/**
 * @module cairn/inspector
 * The web inspector, for scripts: {@link startInspector} serves a read-only page
 * over an engine (threads, their timelines, states, diffs, effects, integrity) on
 * 127.0.0.1 behind a random access token. `cairn inspect --db <url>` starts the same
 * server from the command line.
 *
 * @example
 * ```ts
 * import { sqlite } from 'cairn/sqlite';
 * import { startInspector } from 'cairn/inspector';
 * const engine = sqlite('./cairn.db', { readOnly: true });
 * const { url, close } = await startInspector({ engine });
 * console.log(`open ${url}`);
 * ```
 */
export { startInspector } from './server.js';
export type { Inspector, InspectorOptions } from './server.js';
