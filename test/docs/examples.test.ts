/**
 * The programs in examples/ run as their header comments say: each is started with
 * tsx in a child process, from the repository (so `import 'cairn'` is the package's
 * self-reference to dist/), and must exit 0 and print its key lines. The agent is
 * also SIGKILLed at its marked crash point and run again: the ticket API it talks to
 * must have seen one POST.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import pg from 'pg';
import { describe, expect, it } from 'vitest';
import { PG_URL } from '../helpers/postgres.js';
import { REPO, runTs } from './samples.js';
import { tempDir } from '../helpers/temp-dirs.js';

const example = (name: string) => join(REPO, 'examples', `${name}.ts`);

describe.concurrent('examples', () => {
  it('tool-agent.ts runs four turns: the logs as an artifact, the customer recorded, one ticket opened', async () => {
    const dir = tempDir('cairn-example-agent-');
    const run = await runTs(example('tool-agent'), { cwd: REPO, env: { AGENT_DIR: dir } });
    expect(run.stderr).toBe('');
    expect(run.code).toBe(0);
    const lines = run.stdout.split('\n');
    expect(lines.filter((l) => l.startsWith('assistant'))).toHaveLength(4);
    expect(lines).toContain('tool      cust_42 (Acme Corp, plan: team)');
    expect(lines).toContain('tool      ticket T-1001 opened');
    expect(lines).toContain('artifact: 715 matching log lines');
    expect(lines).toContain('status: completed; the ticket API saw 1 POST');
    expect(run.stdout).toMatch(/tool {6}314385 bytes of logs, kept as artifact sha256:/);
  });

  it('tool-agent.ts SIGKILLed right after the ticket landed, run again: probes, finds it, and the API saw one POST', async () => {
    const dir = tempDir('cairn-example-agent-crash-');
    const crashed = await runTs(example('tool-agent'), { cwd: REPO, env: { AGENT_DIR: dir, CRASH_AFTER_TICKET: '1' } });
    expect({ code: crashed.code, signal: crashed.signal }).toEqual({ code: null, signal: 'SIGKILL' });
    expect(crashed.stdout).toContain('ticket T-1001 created; crashing before the outcome is recorded');

    const again = await runTs(example('tool-agent'), { cwd: REPO, env: { AGENT_DIR: dir } });
    expect(again.stderr).toBe('');
    expect(again.code).toBe(0);
    expect(again.stdout).toContain('probe support-cust_42/open_ticket: found T-1001, not posting again');
    expect(again.stdout).toContain('status: completed; the ticket API saw 1 POST');
    const requests = readFileSync(join(dir, 'requests.log'), 'utf8').trim().split('\n');
    expect(requests).toEqual(['POST /tickets', 'GET /tickets/by-key/support-cust_42%2Fopen_ticket']);
    expect(JSON.parse(readFileSync(join(dir, 'tickets.json'), 'utf8'))).toHaveLength(1);
  });

  it('ai-sdk-agent.ts: plans with the AI SDK tool loop, is approved, refunds once, replies, and is evaluated against a second model', async () => {
    const dir = tempDir('cairn-example-ai-sdk-');
    const run = await runTs(example('ai-sdk-agent'), { cwd: REPO, env: { AGENT_DIR: dir } });
    expect(run.stderr).toBe('');
    expect(run.code).toBe(0);
    const lines = run.stdout.split('\n');
    expect(lines).toContain('asks: {"question":"Approve: Refund 42 EUR: the lamp arrived broken."}');
    expect(lines).toContain('status: completed; payment pay_1001; reply: Your refund of 42 EUR is on its way.');
    expect(lines).toContain('payments made: 1');
    expect(lines).toContain('model calls made by this process: 3');
    expect(lines.filter((l) => l.startsWith('model call ai.generate: mock-a'))).toHaveLength(3);
    expect(lines).toContain('evaluated against the second model: diverged at seq 1 (plan): plan');
  });

  it('ai-sdk-agent.ts SIGKILLed right after the payment landed, run again: probes, finds it, pays once, makes no finished model call again', async () => {
    const dir = tempDir('cairn-example-ai-sdk-crash-');
    const crashed = await runTs(example('ai-sdk-agent'), { cwd: REPO, env: { AGENT_DIR: dir, CRASH_AT_REFUND: '1' } });
    expect({ code: crashed.code, signal: crashed.signal }).toEqual({ code: null, signal: 'SIGKILL' });
    expect(crashed.stdout).toContain('paid pay_1001; crashing before cairn records it');

    const again = await runTs(example('ai-sdk-agent'), { cwd: REPO, env: { AGENT_DIR: dir } });
    expect(again.stderr).toBe('');
    expect(again.code).toBe(0);
    expect(again.stdout).toContain('probe refund-A-1001: found pay_1001, not paying again');
    expect(again.stdout).toContain('payments made: 1');
    // The plan's two model calls were served; only the reply was asked.
    expect(again.stdout).toContain('model calls made by this process: 1');
    expect(readFileSync(join(dir, 'payments.log'), 'utf8').trim().split('\n')).toHaveLength(1);
  });

  it('postgres-workers.ts: eight submitted threads completed by two worker processes, its schema dropped after', async () => {
    const run = await runTs(example('postgres-workers'), { cwd: REPO, env: { DATABASE_URL: PG_URL } });
    expect(run.stderr).toBe('');
    expect(run.code).toBe(0);
    const schema = /^submitted 8 threads to schema (cairn_example_\w+)$/m.exec(run.stdout)?.[1];
    expect(schema).toBeDefined();
    const rows = run.stdout.split('\n').filter((l) => /^cust_\d {2}w[12] {2}cust_\d: all good$/.test(l));
    expect(rows).toHaveLength(8);
    const summary = /^completed: 8 of 8; by w1: (\d), by w2: (\d); workers exited 0, 0$/m.exec(run.stdout);
    expect(summary).not.toBeNull();
    expect(Number(summary![1]) + Number(summary![2])).toBe(8);
    const pool = new pg.Pool({ connectionString: PG_URL });
    try {
      const { rowCount } = await pool.query('SELECT 1 FROM pg_namespace WHERE nspname = $1', [schema]);
      expect(rowCount).toBe(0);
    } finally {
      await pool.end();
    }
  });

  it('schema-migration.ts: v1 threads read through the upcaster and continued by v2, the chain verified', async () => {
    // The example makes its database under os.tmpdir(): TMPDIR puts it in a folder this file removes.
    const run = await runTs(example('schema-migration'), { cwd: REPO, env: { TMPDIR: tempDir('cairn-example-migration-') } });
    expect(run.stderr).toBe('');
    expect(run.code).toBe(0);
    expect(run.stdout.trim().split('\n')).toEqual([
      'v1 wrote order-7 (completed) and order-8 (submitted, not run)',
      'v2 reads order-7: items [{"color":"red","size":3}], priority normal, status received',
      'order-7: completed, shipped 2 item(s), high priority, items red + blue',
      'order-8: completed, shipped 1 item(s), normal priority, items green',
      'order-7 positions: seq 0: v1, seq 1: v1, seq 2: v2, seq 3: v2, seq 4: v2',
      'verify order-7: ok',
    ]);
  });

  it('human-approval.ts asks, stops, and is answered from a second process: a refused answer changes nothing, the model is not asked again', async () => {
    const run = await runTs(example('human-approval'), { cwd: REPO, env: { TMPDIR: tempDir('cairn-example-approval-') } });
    expect(run.stderr).toBe('');
    expect(run.code).toBe(0);
    expect(run.stdout.split('\n')).toEqual([
      'agent:    interrupted, asks "refund 129 EUR for order-77?" (model calls: 1)',
      'reviewer: "sure" refused (ERR_STATE_VALIDATION); nothing changed',
      'reviewer: completed, refunded (R-refund-order-77) (model calls in this process: 0)',
      'history:  input → interrupt → resume → step → step',
      '',
    ]);
  });

  it('durable-wait.ts sleeps, waits for a payment signal from another process, and completes under a worker', async () => {
    const run = await runTs(example('durable-wait'), { cwd: REPO, env: { TMPDIR: tempDir('cairn-example-wait-') } });
    expect(run.stderr).toBe('');
    expect(run.code).toBe(0);
    const lines = run.stdout.split('\n');
    expect(lines[0]).toMatch(/^shop: {5}waiting \(a sleep until .+\); this process holds nothing$/);
    expect(lines.slice(1)).toEqual(['shop:     the sleep is over; waiting for a payment', 'webhook:  payment queued as signal 1', 'shop:     completed: reminder sent, paid 42 EUR', '']);
  });
});
