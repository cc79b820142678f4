/**
 * What kind of divergence a call the record could not answer is, in a person's words,
 * read from what replay says of it (its call name and reason): another tool or other
 * arguments than the record holds, an effect the record does not hold, or control
 * flow that went elsewhere. No JSX: a test runs it over the runtime's own reasons.
 */

/** A call the record could not answer, as an evaluation report gives it. */
export interface DivergentCall {
  node: string;
  call: number;
  name: string;
  reason: string;
}

/** The kind of `c`, as the evaluation page labels it. */
export function divergenceKind(c: DivergentCall): string {
  const tool = c.name.startsWith('tool:');
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
