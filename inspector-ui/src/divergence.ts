/**
 * What kind of divergence a call the record could not answer is, in a person's words:
 * from the divergence's `kind` (another tool or other arguments than the record holds,
 * an effect the record does not hold, control flow that went elsewhere), or, for a
 * report saved before divergences had one, read from its call name and reason. No
 * JSX: a test runs it over the runtime's own divergences.
 */

/** A call the record could not answer, as an evaluation report gives it. */
export interface DivergentCall {
  node: string;
  call: number;
  name: string;
  /** The runtime's DivergenceKind; absent in reports saved before it had one. */
  kind?: string;
  reason: string;
}

/** Each DivergenceKind as the page says it; a tool's own wording where the call is a tool (`tool:<name>`). */
const LABELS: Record<string, (tool: boolean) => string> = {
  'other-call': (tool) => (tool ? 'a tool the record lacks' : 'a call the record lacks'),
  'other-arguments': (tool) => (tool ? 'other tool arguments' : 'other arguments'),
  'not-recorded': (tool) => (tool ? 'a tool call the record lacks' : 'a call the record lacks'),
  'effect-not-recorded': () => 'an effect the record does not hold',
  'effect-other-arguments': () => 'other effect arguments',
  pause: () => 'a pause the record does not hold',
  next: () => 'the run went elsewhere',
  'graph-changed': () => 'the graph changed',
  'child-run': () => 'the graph changed',
  'ledger-mismatch': () => 'a call the record cannot answer',
  threw: () => 'the node threw',
};

/** The kind of `c`, as the evaluation page labels it. */
export function divergenceKind(c: DivergentCall): string {
  const tool = c.name.startsWith('tool:');
  const label = c.kind === undefined ? undefined : LABELS[c.kind];
  if (label) return label(tool);
  if (c.call < 0) {
    if (c.name === 'next') return 'the run went elsewhere';
    // An effect re-executed with other arguments throws rather than being served.
    if (c.name === 'node' && c.reason.includes('different arguments than its recorded intent')) return 'other effect arguments';
    if (c.name === 'node') return 'the node threw';
    return 'the graph changed';
  }
  if (c.reason === 'recorded with other arguments') return tool ? 'other tool arguments' : 'other arguments';
  if (c.reason === 'nothing was recorded for this call') return tool ? 'a tool call the record lacks' : 'a call the record lacks';
  if (c.reason === 'no such effect was recorded' || c.reason === 'the effect has no recorded outcome') return 'an effect the record does not hold';
  if (c.reason.startsWith('recorded as')) return tool ? 'a tool the record lacks' : 'a call the record lacks';
  if (c.reason.includes('interrupt') || c.reason.includes('wait') || c.reason.includes('sleep')) return 'a pause the record does not hold';
  return 'a call the record cannot answer';
}
