/**
 * The threads the inspector's richer views are tested on, on any engine:
 * - `story` (graph `story`): `gather` records a model output and stores two artifacts
 *   (a text and a PNG) through keyed effects; `draft` fails once and is retried;
 *   `research` is a child run; `review` asks a person (`await ctx.interrupt`). It is
 *   forked by bob from after `gather` and run on, so it has two branches, a child run
 *   on each, and an interrupt pending at its head.
 * - `charge` (graph `billing`): an at-most-once effect whose first try failed after
 *   its intent was written, so its retry left the thread `needs_attention`.
 */
import { readdirSync, statSync, writeFileSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { z } from 'zod';
import { artifactRefSchema } from '../../src/artifacts/artifact-ref-schema.js';
import type { ArtifactStore } from '../../src/contracts/artifact-store.js';
import type { Engine } from '../../src/contracts/engine.js';
import { END, START, graph } from '../../src/runtime/builder.js';
import { field } from '../../src/state/fields.js';
import { defineState } from '../../src/state/schema.js';

/** A 2×2 PNG, red and blue. */
export const PNG = Buffer.from(
  'iVBORw0KGgoAAAANSUhEUgAAAAIAAAACCAIAAAD91JpzAAAAFklEQVR4nGP4z8DAwMDAxMDAwMDAAAANHQEDasKb6QAAAABJRU5ErkJggg==',
  'base64',
);

const Research = defineState({ fields: { q: field.model(z.string(), { default: '' }), a: field.model(z.string(), { default: '' }) } });
const Story = defineState({
  fields: {
    topic: field.model(z.string(), { default: '' }),
    doc: field.model(artifactRefSchema),
    chart: field.model(artifactRefSchema),
    draft: field.model(z.string(), { default: '' }),
    notes: field.model(z.array(z.string()), { reduce: 'append', default: [] }),
    verdict: field.model(z.string(), { default: '' }),
  },
});

/** The `story` graph; `draft` throws `failures.left` times before it succeeds. */
export function storyApp(engine: Engine, artifacts: ArtifactStore, failures = { left: 0 }) {
  const research = graph(Research)
    .node('answer', async (s, ctx) => ({ a: await ctx.record('model', () => `findings on ${s.q}`) }))
    .edge(START, 'answer')
    .edge('answer', END);
  return graph(Story)
    .node('gather', async (s, ctx) => {
      const text = await ctx.record('model', () => `notes on ${s.topic}: cairns mark trails`, { kind: 'model', model: 'mock-writer', describe: () => ({ usage: { inputTokens: 12, outputTokens: 7 } }) });
      const docName = `notes-${s.topic}.txt`;
      const chartName = `chart-${s.topic}.png`;
      const doc = await ctx.effect('put_notes', { args: { name: docName }, run: () => ctx.artifacts.putNamed(docName, text, { mediaType: 'text/plain' }), probe: () => ctx.artifacts.head(docName) });
      const chart = await ctx.effect('put_chart', { args: { name: chartName }, run: () => ctx.artifacts.putNamed(chartName, PNG, { mediaType: 'image/png' }), probe: () => ctx.artifacts.head(chartName) });
      return { doc, chart, notes: [text] };
    })
    .node(
      'draft',
      async (s, ctx) => {
        if (failures.left > 0) {
          failures.left--;
          throw new Error('model overloaded');
        }
        return { draft: await ctx.record('model', () => `a draft about ${s.topic}`) };
      },
      { retry: { maxAttempts: 2, initialDelayMs: 1 } },
    )
    .subgraph('research', research, { input: (s) => ({ q: s.topic }), output: (r) => ({ notes: [r.a] }) })
    .node('review', async (s, ctx) => {
      const ok = await ctx.interrupt({ question: 'publish this draft?', draft: s.draft }, { answer: z.boolean() });
      return { verdict: ok ? 'publish' : 'rework' };
    })
    .edge(START, 'gather')
    .edge('gather', 'draft')
    .edge('draft', 'research')
    .edge('research', 'review')
    .conditionalEdge('review', (s) => (s.verdict === 'publish' ? END : 'draft'), { targets: ['draft', END] })
    .compile({ engine, artifacts, name: 'story' });
}

const Bill = defineState({ fields: { amount: field.model(z.number(), { default: 0 }), receipt: field.model(z.string(), { default: '' }) } });

/** The `billing` graph: `charge` runs an at-most-once effect that fails once after its intent, so the retry needs a person. */
export function billingApp(engine: Engine) {
  let tries = 0;
  return graph(Bill)
    .node(
      'charge',
      async (s, ctx) => {
        const receipt = await ctx.effect('charge_card', {
          args: { amount: s.amount },
          mode: 'atMostOnce',
          run: () => {
            tries++;
            if (tries === 1) throw new Error('gateway timeout');
            return `receipt-${s.amount}`;
          },
        });
        return { receipt };
      },
      { retry: { maxAttempts: 2, initialDelayMs: 1 } },
    )
    .edge(START, 'charge')
    .edge('charge', END)
    .compile({ engine, name: 'billing' });
}

/** Writes `story` (two branches, a retried step, child runs, two artifacts, an interrupt pending) and `charge` (needs attention). */
export async function writeViewThreads(engine: Engine, artifacts: ArtifactStore): Promise<void> {
  const story = storyApp(engine, artifacts, { left: 1 });
  await story.run({ thread: 'story', input: { topic: 'cairns' } });
  // Bob forks from after gather (seq 1) with another topic; the fork runs on to its own review.
  await story.fork({ thread: 'story', seq: 1, patch: { topic: 'stones' }, actor: 'bob' });
  await story.run({ thread: 'story' });
  await billingApp(engine)
    .run({ thread: 'charge', input: { amount: 40 } })
    .catch(() => undefined);
}

/** Overwrites the bytes of the fs artifact whose blob is named by `sha256` under `root` with as many other bytes. */
export function corruptFsBlob(root: string, sha256: string): string {
  const walk = (dir: string): string | undefined => {
    for (const name of readdirSync(dir)) {
      const path = join(dir, name);
      if (statSync(path).isDirectory()) {
        const found = walk(path);
        if (found) return found;
      } else if (name.startsWith(sha256)) return path;
    }
    return undefined;
  };
  const path = walk(root);
  if (!path) throw new Error(`no blob ${sha256} under ${root}`);
  const bytes = readFileSync(path);
  writeFileSync(path, Buffer.from(bytes.map((b) => b ^ 0xff)));
  return path;
}
