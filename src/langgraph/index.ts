/**
 * @module cairn/langgraph
 * LangGraph.js on cairn's storage: {@link CairnSaver}, a `BaseCheckpointSaver` over
 * any cairn engine (memory, SQLite, PostgreSQL). The threads it writes are cairn
 * threads, so `cairn verify`, `cairn history`, `cairn export` and the inspector work
 * on them; list channels that only grew are stored as their new items; two runs on
 * one thread at once get a ThreadBusyError instead of a silently forked chain.
 *
 * Needs `@langchain/langgraph-checkpoint` and `@langchain/core` (optional peer
 * dependencies of cairn: only this entry point imports them).
 *
 * @example
 * ```ts
 * import { sqlite } from 'cairn/sqlite';
 * import { CairnSaver } from 'cairn/langgraph';
 * const app = workflow.compile({ checkpointer: new CairnSaver({ engine: sqlite('./cairn.db') }) });
 * ```
 */
export { CairnSaver } from './cairn-saver.js';
export type { CairnSaverOptions } from './cairn-saver.js';
