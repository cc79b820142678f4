/**
 * @module cairn/inspector
 * The web inspector, for scripts: {@link startInspector} serves a page over an
 * engine (threads, their timelines, states, diffs, effects, integrity) on 127.0.0.1
 * behind a random access token; read-only unless `allowActions` (then, with `app`,
 * it answers interrupts, forks, replays, evaluates threads; and signals, settles effects, cancels and
 * deletes threads). `cairn inspect --db <url>` starts the same server from the
 * command line.
 *
 * @example
 * ```ts
 * import { sqlite } from 'cairn/sqlite';
 * import { startInspector } from 'cairn/inspector';
 * const engine = sqlite('./cairn.db', { readOnly: true });
 * const { url, close } = await startInspector({ engine });
 * console.log(`open ${url}`);
 * // To act on threads: an engine open for writing, and the application for resume/fork/replay.
 * // await startInspector({ engine: sqlite('./cairn.db'), allowActions: true, app, actor: 'ana' });
 * ```
 */
export { startInspector } from './server.js';
export type { Inspector, InspectorOptions } from './server.js';
export { TOKEN_HEADER } from './actions.js';
export type { ActionsInfo } from './actions.js';
export { parseEvaluationReport } from './evaluation.js';
export type { RedactionChoice } from '../inspect/redaction.js';
