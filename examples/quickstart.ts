// The README's first example, kept runnable: test/package/readme-example.test.ts checks they match and runs it.
import { z } from 'zod';
import { defineState, field, graph, START, END } from 'cairn';
import { sqlite } from 'cairn/sqlite';

const State = defineState({ fields: { topic: field.model(z.string()), draft: field.model(z.string().optional()) } });
const app = graph(State)
  .node('write', async (s, ctx) => ({ draft: await ctx.record('model', async () => `A post about ${s.topic}`) })) // your model call
  .edge(START, 'write').edge('write', END)
  .compile({ engine: sqlite('./cairn.db') });
await app.run({ thread: 'post-1', input: { topic: 'cairns' } }); // after a crash, app.run({ thread: 'post-1' }) resumes
