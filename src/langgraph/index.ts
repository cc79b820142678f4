/**
 * @module cairn/langgraph
 * LangGraph.js on cairn's storage: {@link CairnSaver}, a `BaseCheckpointSaver` over
 * any cairn engine (memory, SQLite, PostgreSQL), and {@link CairnStore}, a `BaseStore`
 * over the same engine's store. The threads the saver writes are cairn
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
 * import { CairnSaver, CairnStore } from 'cairn/langgraph';
 * const engine = sqlite('./cairn.db');
 * const app = workflow.compile({ checkpointer: new CairnSaver({ engine }), store: new CairnStore({ engine }) });
 * ```
 */
export { CairnSaver } from './cairn-saver.js';
export type { CairnSaverOptions } from './cairn-saver.js';
export { CairnStore } from './cairn-store.js';
export type { CairnStoreOptions } from './cairn-store.js';
export { importLangGraph, openLangGraphSource } from './import-langgraph.js';
export type { ImportLangGraphOptions, LangGraphImportReport, LangGraphSource } from './import-langgraph.js';
