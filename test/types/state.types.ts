/**
 * Type tests: compiled by `tsc --noEmit` in `npm test`. Every `@ts-expect-error`
 * must be an error, or the build fails: this pins what a node may return.
 */
import { z } from 'zod';
import { defineState, field, graph, START, END, type App, type StateOf, type UpdateOf } from '../../src/index.js';

const State = defineState({
  fields: {
    summary: field.model(z.string().optional()),
    messages: field.model(z.array(z.object({ role: z.string(), text: z.string() })), { reduce: 'append', default: [] }),
    total: field.model(z.number(), { reduce: (current: number, add: number) => current + add, default: 0 }),
    step: field.runtime(z.number(), { compute: (rt) => rt.step, default: 0 }),
  },
  derived: { count: (s) => s.messages.length, hasSummary: (s) => s.summary !== undefined },
});

type S = StateOf<typeof State>;
type U = UpdateOf<typeof State>;

// The state type follows from the schema.
const read = (s: S): [string | undefined, number, number, number, boolean] => [s.summary, s.messages.length, s.total, s.step, s.hasSummary];
void read;

// Model fields: a node may write them with their write types.
const ok1: U = { summary: 'x' };
const ok2: U = { messages: [{ role: 'user', text: 'hi' }] };
const ok3: U = { total: 3 };
const ok4: U = {};
void [ok1, ok2, ok3, ok4];

// @ts-expect-error runtime fields are not writable by nodes
const bad1: U = { step: 1 };
// @ts-expect-error derived fields are not writable
const bad2: U = { count: 2 };
// @ts-expect-error unknown fields are rejected
const bad3: U = { nope: 1 };
// @ts-expect-error a replace field takes its own type
const bad4: U = { summary: 42 };
// @ts-expect-error an append field takes an array of items
const bad5: U = { messages: { role: 'user', text: 'hi' } };
// @ts-expect-error a custom reducer takes its update type
const bad6: U = { total: 'three' };
void [bad1, bad2, bad3, bad4, bad5, bad6];

// The same rules hold for what a node function returns, inferred or not.
graph(State)
  .node('ok', async (s) => ({ summary: `${s.count}` }))
  // @ts-expect-error a node may not return a runtime field
  .node('runtime', async () => ({ step: 5 }))
  // @ts-expect-error a node may not return a derived field
  .node('derived', () => ({ count: 5 }))
  .edge(START, 'ok')
  .edge('ok', END)
  // @ts-expect-error edges only name nodes of the graph
  .edge('ok', 'missing');

// State fields without derived ones still type.
const Plain = defineState({ fields: { n: field.model(z.number(), { default: 0 }) } });
const plainUpdate: UpdateOf<typeof Plain> = { n: 1 };
void plainUpdate;

// Subgraphs: input writes the child's model fields, output the parent's; sharing takes no mapping.
const Child = defineState({ fields: { question: field.model(z.string(), { default: '' }), answer: field.model(z.string(), { default: '' }) } });
const childGraph = graph(Child).node('a', () => ({ answer: 'x' })).edge(START, 'a').edge('a', END);
graph(State).subgraph('ok', childGraph, { input: (s) => ({ question: s.summary ?? '' }), output: (r) => ({ summary: r.answer }) });
// @ts-expect-error input writes the child's fields with the child's types
graph(State).subgraph('bad-input', childGraph, { input: () => ({ question: 42 }) });
// @ts-expect-error output writes the parent's model fields only
graph(State).subgraph('bad-output', childGraph, { output: () => ({ step: 1 }) });
// @ts-expect-error a shared child takes no input mapping
graph(State).subgraph('bad-share', childGraph, { share: true, input: () => ({}) });

// A write is what the field's schema takes (its input), the state what it gives (its
// output): the runtime validates every write through the schema and stores the output.
const Parsed = defineState({
  fields: {
    length: field.model(z.string().transform((s) => s.length), { default: 0 as never }),
    profile: field.model(z.object({ name: z.string(), tier: z.string().default('free') }).optional()),
    names: field.model(z.array(z.string().transform((s) => s.toLowerCase())), { reduce: 'append', default: [] }),
  },
});
const parsedWrite: UpdateOf<typeof Parsed> = { length: 'abc', profile: { name: 'ada' }, names: ['ADA'] };
void parsedWrite;
// @ts-expect-error a transformed field is written with the schema's input, not its output
const parsedBad: UpdateOf<typeof Parsed> = { length: 3 };
void parsedBad;
const parsedRead = (s: StateOf<typeof Parsed>): [number, string | undefined] => [s.length, s.profile?.tier];
void parsedRead;
graph(Parsed)
  .node('write', () => ({ length: 'abc', profile: { name: 'ada' } }))
  .edge(START, 'write')
  .edge('write', END);

// The state a node, a route and a caller get is frozen at the top level: assigning a
// field throws at run time, so the type refuses it (a node returns its writes instead).
graph(State)
  .node('assigns', (s) => {
    // @ts-expect-error the state's fields are read-only
    s.summary = 'x';
    return {};
  })
  .edge(START, 'assigns')
  .edge('assigns', END);
const frozenRead = (s: S): void => {
  // @ts-expect-error a derived field is read-only too
  s.count = 1;
};
void frozenRead;

// Reads of the root graph are typed by its state; a child run's (`ns`) are the child
// graph's, which the caller names or reads as a record.
declare const app: App<typeof State>;
const Asked = defineState({ fields: { answer: field.model(z.string(), { default: '' }) } });
async function reads(): Promise<void> {
  const root: S = await app.getState({ thread: 't' });
  const rootAt: S = await app.stateAt({ thread: 't', seq: 0, ns: '' });
  const child = await app.getState<StateOf<typeof Asked>>({ thread: 't', ns: 'ask:0@1' });
  const childAnswer: string = child.answer;
  const loose = await app.stateAt({ thread: 't', seq: 0, ns: 'ask:0@1' });
  // @ts-expect-error a child run's state is not the root graph's unless the caller says which it is
  const wrong: S = loose;
  void [root, rootAt, childAnswer, wrong];
}
void reads;
