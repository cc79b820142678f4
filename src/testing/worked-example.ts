/**
 * @module testing/worked-example
 * The worked example (docs/architecture.md), the fixture every test, the demo and the crash tests share:
 * `load_customer(cust_42)` → `generate_summary(customer)` →
 * `put_object("summary-42.txt", summary)` (an artifact, idempotent by key, with a
 * probe) → `save_prefs` (a store write, idempotent by key). Checkpoints A, B, C, D
 * land at the four step boundaries (seq 1–4; seq 0 is the input position).
 *
 * The customer record and the summariser are local and deterministic, so the
 * example needs no network. Every effect execution is reported to `onEffectRun`,
 * so a test can count how often a side effect really ran.
 */
import { z } from 'zod';
import type { ArtifactStore } from '../contracts/artifact-store.js';
import type { Engine } from '../contracts/engine.js';
import type { App } from '../runtime/app.js';
import type { EventSink } from '../runtime/events.js';
import { END, START, graph } from '../runtime/builder.js';
import { field } from '../state/fields.js';
import { defineState } from '../state/schema.js';

/** A CRM record, as the worked example's lookup returns it. */
export const Customer = z.object({ id: z.string(), name: z.string(), plan: z.string(), since: z.string(), tickets: z.number() });
export type Customer = z.infer<typeof Customer>;

/** An artifact reference `{ id, sha256, media_type, size_bytes }` as a zod schema, for a state field. */
export const ArtifactRefSchema = z.object({ id: z.string(), sha256: z.string(), media_type: z.string(), size_bytes: z.number() });

/** State of the worked example: the customer, its summary, the uploaded artifact and a log. */
export const WorkedExampleState = defineState({
  version: 1,
  fields: {
    customerId: field.model(z.string(), { default: 'cust_42' }),
    customer: field.model(Customer.optional()),
    summary: field.model(z.string().optional()),
    artifact: field.model(ArtifactRefSchema.optional()),
    prefsVersion: field.model(z.number().optional()),
    log: field.model(z.array(z.string()), { reduce: 'append', default: [] }),
  },
  derived: { done: (s) => s.prefsVersion !== undefined },
});

/** The local CRM the example reads from. */
export function lookupCustomer(id: string): Customer {
  const number = id.replace(/\D/g, '') || '0';
  return { id, name: `Customer ${number}`, plan: Number(number) % 2 === 0 ? 'team' : 'solo', since: '2024-03-01', tickets: Number(number) % 7 };
}

/** The deterministic "model" that writes the summary. */
export function summarise(customer: Customer): string {
  return `${customer.name} (${customer.id}) has been on the ${customer.plan} plan since ${customer.since} and opened ${customer.tickets} tickets.\n`;
}

/** The engine and artifact store of the worked example, and hooks crash tests watch. */
export interface WorkedExampleOptions {
  engine: Engine;
  artifacts: ArtifactStore;
  onEvent?: EventSink;
  /** Called each time the artifact upload really executes (not when served from the ledger or found by the probe). */
  onEffectRun?: (name: string, key: string) => void;
  /** The clock recorded by `save_prefs`. Tests pass a fixed one to compare runs. */
  now?: () => string;
  snapshotEvery?: number;
}

/** The worked example's graph, compiled on the given engine. */
export function workedExample(options: WorkedExampleOptions): App<typeof WorkedExampleState> {
  const now = options.now ?? (() => new Date().toISOString());
  return graph(WorkedExampleState)
    .node('load_customer', async (s, ctx) => ({
      customer: await ctx.record('crm.get', () => lookupCustomer(s.customerId)),
      log: ['loaded customer'],
    }))
    .node('generate_summary', async (s, ctx) => ({
      summary: await ctx.record('model.summarise', () => summarise(s.customer!)),
      log: ['summarised'],
    }))
    .node('put_object', async (s, ctx) => {
      const key = `summary-${s.customerId.replace(/\D/g, '')}.txt`;
      const artifact = await ctx.effect('put_object', {
        idempotencyKey: key,
        args: { key, summary: s.summary },
        run: (k) => {
          options.onEffectRun?.('put_object', k);
          return ctx.artifacts.putNamed(k, s.summary!, { mediaType: 'text/plain' });
        },
        // Asked after a crash between the upload and its recorded outcome: did it land?
        probe: (k) => ctx.artifacts.head(k),
      });
      return { artifact, log: [`stored ${artifact.id}`] };
    })
    .node('save_prefs', async (s, ctx) => {
      const at = await ctx.record('clock', now);
      // A store write from a node is an effect, idempotent by key: a crash after it
      // landed re-runs it with the same key and the store absorbs the repeat.
      const item = await ctx.store.put(['user', s.customerId.replace(/\D/g, '')], 'prefs', { last_summary_at: at, artifact: s.artifact!.id });
      return { prefsVersion: item.version, log: ['saved prefs'] };
    })
    .edge(START, 'load_customer')
    .edge('load_customer', 'generate_summary')
    .edge('generate_summary', 'put_object')
    .edge('put_object', 'save_prefs')
    .edge('save_prefs', END)
    .compile({
      engine: options.engine,
      artifacts: options.artifacts,
      retry: { maxAttempts: 1 },
      ...(options.onEvent ? { onEvent: options.onEvent } : {}),
      ...(options.snapshotEvery ? { snapshotEvery: options.snapshotEvery } : {}),
    });
}
