/**
 * An order that waits: for a time, then for an event from outside. The `remind`
 * node sleeps (`ctx.sleep`), then `collect` waits for a `payment` signal
 * (`ctx.waitFor`, with a schema and a timeout). While the thread waits it is
 * `waiting` in the database with its wake time, and no process holds anything: a
 * `Worker` claims it again when it is due. The payment is sent by another process
 * (`app.signal`), as a webhook handler would; signals are queued durably, so the
 * wait takes it whether it arrives before, during or after the wait begins (here it
 * may even land while the worker is still committing the wait: it is not missed).
 *
 *     npx tsx examples/durable-wait.ts
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { z } from 'zod';
import { defineState, field, graph, START, END, Worker } from 'cairn';
import { sqlite } from 'cairn/sqlite';

const State = defineState({ fields: { log: field.model(z.array(z.string()), { reduce: 'append', default: [] }) } });
const [, , role = 'shop', dbArg] = process.argv;
const db = dbArg ?? join(mkdtempSync(join(tmpdir(), 'cairn-example-wait-')), 'shop.db');
const engine = sqlite(db);

const app = graph(State)
  .node('remind', async (_s, ctx) => {
    await ctx.sleep(300);
    return { log: ['reminder sent'] };
  })
  .node('collect', async (_s, ctx) => {
    const paid = await ctx.waitFor('payment', { timeoutMs: 60_000, schema: z.object({ amount: z.number() }) });
    return { log: [paid.status === 'received' ? `paid ${paid.payload.amount} EUR` : 'no payment: cancelled'] };
  })
  .edge(START, 'remind')
  .edge('remind', 'collect')
  .edge('collect', END)
  .compile({ engine });

if (role === 'webhook') {
  // Another process: no graph runs here, the signal is queued in the database.
  const signal = await app.signal({ thread: 'order-9', name: 'payment', payload: { amount: 42 } });
  console.log(`webhook:  payment queued as signal ${signal.id}`);
  await engine.close();
} else {
  const first = await app.run({ thread: 'order-9', input: {} });
  console.log(`shop:     ${first.status} (a ${first.waits[0]!.kind} until ${new Date(first.waits[0]!.until!).toISOString()}); this process holds nothing`);
  // A worker claims the thread when it is due. Its events say when the node starts waiting for the payment.
  let waitingForPayment!: () => void;
  const atPayment = new Promise<void>((resolve) => (waitingForPayment = resolve));
  let finished!: (status: string | undefined) => void;
  const completed = new Promise<string | undefined>((resolve) => (finished = resolve));
  const worker = new Worker(app, {
    pollMs: 50,
    onEvent: (event) => {
      if (event.type === 'wait' && event.kind === 'signal') waitingForPayment();
    },
    onRun: (report) => {
      if (report.status === 'completed') finished(report.status);
    },
  });
  const running = worker.run();
  await atPayment;
  console.log('shop:     the sleep is over; waiting for a payment');
  const here = fileURLToPath(import.meta.url);
  const webhook = spawnSync(process.execPath, [...process.execArgv, here, 'webhook', db], { encoding: 'utf8' });
  process.stdout.write(webhook.stdout);
  if (webhook.status !== 0) throw new Error(webhook.stderr);
  await completed;
  await worker.stop();
  await running;
  console.log(`shop:     completed: ${(await app.getState({ thread: 'order-9' })).log.join(', ')}`);
  await engine.close();
}
