/**
 * A Worker renews the leases it claims for its own `leaseMs`, not the app's: a worker
 * whose leases are shorter than `compile({ leaseMs })` (the default 30 s) keeps a thread
 * through a step longer than its lease, so no other worker takes it over and runs the
 * step again. Runs on memory, SQLite and PostgreSQL.
 */
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { defineState, field, graph, START, END, Worker, type WorkerRunReport } from '../../src/index.js';
import { ENGINES, sleep, useEngine, within } from './engines.js';

const State = defineState({ fields: { n: field.model(z.number(), { default: 0 }) } });

describe.each(ENGINES)('worker leases on %s', (name) => {
  const ctx = useEngine(name);

  it("a worker's leaseMs shorter than the app's: its leases are renewed in time, and a step longer than the lease runs once", async () => {
    let executions = 0;
    // The app's lease is the default (30 s), renewed every 10 s: a 300 ms lease renewed at that pace lapses mid-step.
    const app = graph(State)
      .node('slow', async (s) => {
        executions++;
        await sleep(1_000);
        return { n: s.n + 1 };
      })
      .edge(START, 'slow')
      .edge('slow', END)
      .compile({ engine: ctx.engine, name: 'leases' });
    await app.submit({ thread: 't', input: {} });
    const reports: WorkerRunReport[] = [];
    const workers = [0, 1].map(() => new Worker(app, { leaseMs: 300, pollMs: 20, onRun: (r) => reports.push(r) }));
    const first = workers[0]!.run();
    await sleep(100);
    const second = workers[1]!.run();
    try {
      await within(
        (async () => {
          while ((await app.getThread({ thread: 't' }))?.status !== 'completed') await sleep(20);
        })(),
        10_000,
        'the thread never completed',
      );
    } finally {
      await Promise.all(workers.map((w) => w.stop()));
      await Promise.all([first, second]);
    }
    expect(executions).toBe(1);
    expect(reports.map((r) => r.error ?? r.status)).toEqual(['completed']);
    expect((await app.getState({ thread: 't' })).n).toBe(1);
  });
});
