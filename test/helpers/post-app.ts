/**
 * The post graph the CLI history tests and the inspector's browser tests share: draft
 * (a record, an effect, an interrupt after it) → research (a child run with a record
 * of its own) → END.
 */
import { z } from 'zod';
import type { Engine } from '../../src/contracts/engine.js';
import { END, START, graph } from '../../src/runtime/builder.js';
import { field } from '../../src/state/fields.js';
import { defineState } from '../../src/state/schema.js';

const Child = defineState({ fields: { q: field.model(z.string(), { default: '' }), a: field.model(z.string(), { default: '' }) } });
const Post = defineState({
  fields: {
    topic: field.model(z.string(), { default: '' }),
    approved: field.model(z.boolean(), { default: false }),
    notes: field.model(z.array(z.string()), { reduce: 'append', default: [] }),
  },
});

/** draft (a record, an effect, an interrupt after it) → research (a child run) → END. */
export function postApp(engine: Engine) {
  const research = graph(Child)
    .node('answer', async (s, ctx) => ({ a: await ctx.record('model', () => `answer to ${s.q}`) }))
    .edge(START, 'answer')
    .edge('answer', END);
  return graph(Post)
    .node('draft', async (s, ctx) => {
      const text = await ctx.record('model', () => `a post about ${s.topic}`);
      await ctx.effect('notify', { run: () => 'sent' });
      ctx.interruptAfter({ question: 'publish this?', text });
      return { notes: [text] };
    })
    .subgraph('research', research, { input: (s) => ({ q: s.topic }), output: (r) => ({ notes: [r.a] }) })
    .edge(START, 'draft')
    .edge('draft', 'research')
    .edge('research', END)
    .compile({ engine });
}
