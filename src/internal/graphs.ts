/**
 * @module internal/graphs
 * Where the runtime keeps the description of each graph it runs, so tools without
 * the application's code (the web inspector, scripts) can draw a thread's graph: a
 * store item under `[...GRAPH_NAMESPACE, <graph name>]`, keyed by the digest of the
 * description, written once per app instance and graph version.
 */

/** Namespace prefix of the graph descriptions kept in the store; the graph's name is the next label. */
export const GRAPH_NAMESPACE: readonly string[] = ['cairn', 'graphs'];

/** True for a namespace under {@link GRAPH_NAMESPACE}. */
export function isGraphNamespace(namespace: readonly string[]): boolean {
  return namespace.length > GRAPH_NAMESPACE.length && GRAPH_NAMESPACE.every((label, i) => namespace[i] === label);
}
