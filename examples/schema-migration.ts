/**
 * Changing the state schema under stored threads. Version 1 of the code kept an
 * order's one item as two fields (`item_color`, `item_size`); version 2 keeps a list
 * of items and adds a `priority` with a default. Version 1 writes two threads: one
 * it completes, one it only submits (left for later). Then version 2 of the code, with
 * `version: 2` and an upcaster `upcast: { 1: (v1) => v2 }`, reads them: the upcaster
 * runs when a version-1 position is read (stored rows are never rewritten), a field
 * missing from the old rows reads as its default, and both threads go on under the
 * new graph: the completed one with new input, the submitted one where it stopped.
 * The first position written under version 2 stores the whole state (a rebase), so
 * later reads never need the upcaster again; `verify` proves the chain across both.
 * In a real deployment the two versions are two releases of one program; here they
 * are two blocks of one file, on one SQLite database in a temp dir.
 *
 *     npx tsx examples/schema-migration.ts
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { z } from 'zod';
import { defineState, field, graph, START, END } from 'cairn';
import { sqlite } from 'cairn/sqlite';

const engine = sqlite(join(mkdtempSync(join(tmpdir(), 'cairn-example-migration-')), 'orders.db'));

// ---- Version 1 of the code, as it was deployed.

const OrderV1 = defineState({
  version: 1,
  fields: {
    customer: field.model(z.string()),
    item_color: field.model(z.string()),
    item_size: field.model(z.number()),
    status: field.model(z.string(), { default: 'new' }),
  },
});
const v1 = graph(OrderV1)
  .node('receive', () => ({ status: 'received' }))
  .edge(START, 'receive')
  .edge('receive', END)
  .compile({ engine });

await v1.run({ thread: 'order-7', input: { customer: 'cust_42', item_color: 'red', item_size: 3 } });
await v1.submit({ thread: 'order-8', input: { customer: 'cust_43', item_color: 'green', item_size: 2 } });
console.log('v1 wrote order-7 (completed) and order-8 (submitted, not run)');

// ---- Version 2: a list of items, a priority, and the upcaster from version 1.

const Item = z.object({ color: z.string(), size: z.number() });
const OrderV2 = defineState({
  version: 2,
  fields: {
    customer: field.model(z.string()),
    items: field.model(z.array(Item), { reduce: 'append', default: [] }),
    priority: field.model(z.enum(['low', 'normal', 'high']), { default: 'normal' }),
    status: field.model(z.string(), { default: 'new' }),
  },
  upcast: {
    1: ({ item_color, item_size, ...v1 }) => ({ ...v1, items: [{ color: item_color, size: item_size }] }),
  },
});
const v2 = graph(OrderV2)
  .node('receive', (s) => ({ status: s.status === 'new' ? 'received' : s.status }))
  .node('ship', (s) => ({ status: `shipped ${s.items.length} item(s), ${s.priority} priority` }))
  .edge(START, 'receive')
  .edge('receive', 'ship')
  .edge('ship', END)
  .compile({ engine });

const read = await v2.getState({ thread: 'order-7' });
console.log(`v2 reads order-7: items ${JSON.stringify(read.items)}, priority ${read.priority}, status ${read.status}`);

const seven = await v2.run({ thread: 'order-7', input: { items: [{ color: 'blue', size: 1 }], priority: 'high' } });
console.log(`order-7: ${seven.status}, ${seven.state.status}, items ${seven.state.items.map((i) => i.color).join(' + ')}`);

const eight = await v2.run({ thread: 'order-8' });
console.log(`order-8: ${eight.status}, ${eight.state.status}, items ${eight.state.items.map((i) => i.color).join(' + ')}`);

const versions = (await v2.history({ thread: 'order-7' })).map((p) => `seq ${p.seq}: v${p.schemaVersion}`).reverse();
console.log(`order-7 positions: ${versions.join(', ')}`);
const verified = await v2.verify({ thread: 'order-7' });
console.log(`verify order-7: ${verified.ok ? 'ok' : JSON.stringify(verified.problems)}`);
await engine.close();
