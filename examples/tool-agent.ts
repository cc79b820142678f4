/**
 * A tool-calling agent that survives SIGKILL. A scripted fake model (deterministic,
 * no network) asks for three tools over four turns: `search_logs` returns ~300 KB,
 * too big for state, so it is kept as an artifact (`ctx.recordArtifact`) and only its
 * ref goes into the conversation; `lookup_customer` is an ordinary tool call whose
 * output is recorded (`ctx.record`); `open_ticket` is a side effect on a tiny ticket
 * API this program starts on localhost (its tickets are kept in a file, so they
 * outlive the process): it runs through `ctx.effect` with an `idempotencyKey` the API
 * honours and a `probe` that asks the API whether the ticket already exists. Run it
 * with `CRASH_AFTER_TICKET=1` and it kills itself with SIGKILL right after the ticket
 * landed, before cairn could record the outcome; run it again and it probes, finds
 * the ticket and goes on: the API sees exactly one POST. Data lives in
 * `$AGENT_DIR` (default: a folder in the OS temp dir); delete it to start over.
 *
 *     npx tsx examples/tool-agent.ts
 *     CRASH_AFTER_TICKET=1 npx tsx examples/tool-agent.ts; npx tsx examples/tool-agent.ts
 */
import { appendFileSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { z } from 'zod';
import { defineState, field, graph, loadValue, START, END, type StateOf } from 'cairn';
import { fsArtifacts } from 'cairn/fs';
import { sqlite } from 'cairn/sqlite';

const dir = process.env.AGENT_DIR ?? join(tmpdir(), 'cairn-example-tool-agent');
mkdirSync(dir, { recursive: true });
const THREAD = 'support-cust_42';

// ---- The state: a conversation of messages; a tool's big output is a ref, not text.

const Ref = z.object({ id: z.string(), sha256: z.string(), media_type: z.string(), size_bytes: z.number() });
const ToolCall = z.object({ name: z.enum(['search_logs', 'lookup_customer', 'open_ticket']), args: z.record(z.string(), z.string()) });
const Message = z.object({
  role: z.enum(['user', 'assistant', 'tool']),
  content: z.string(),
  call: ToolCall.optional(),
  artifact: Ref.optional(),
});
type Message = z.infer<typeof Message>;

const State = defineState({
  fields: { messages: field.model(z.array(Message), { reduce: 'append', default: [] }) },
});

// ---- The fake model: the next scripted turn, chosen by how many tool results it has seen.

function fakeModel(messages: readonly Message[]): Message {
  const results = messages.filter((m) => m.role === 'tool');
  switch (results.length) {
    case 0:
      return { role: 'assistant', content: 'Let me look at the logs.', call: { name: 'search_logs', args: { query: 'status=503' } } };
    case 1:
      return { role: 'assistant', content: 'Who is the customer?', call: { name: 'lookup_customer', args: { id: 'cust_42' } } };
    case 2:
      return { role: 'assistant', content: 'Opening a ticket.', call: { name: 'open_ticket', args: { title: `503s for ${results[1]!.content}` } } };
    default:
      return { role: 'assistant', content: `Done: ${results[2]!.content}. The 503s come from the upstream timeout in the logs.` };
  }
}

// ---- A tiny ticket API on localhost. Tickets and the request log live in files.

const ticketsFile = join(dir, 'tickets.json');
const requestLog = join(dir, 'requests.log');
type Ticket = { id: string; title: string; idempotencyKey: string };

function startTicketApi(): Promise<Server> {
  const server = createServer((req, res) => {
    appendFileSync(requestLog, `${req.method} ${req.url}\n`);
    const tickets: Ticket[] = existsSync(ticketsFile) ? JSON.parse(readFileSync(ticketsFile, 'utf8')) : [];
    const byKey = /^\/tickets\/by-key\/(.+)$/.exec(req.url ?? '');
    if (req.method === 'GET' && byKey) {
      const ticket = tickets.find((t) => t.idempotencyKey === decodeURIComponent(byKey[1]!));
      res.writeHead(ticket ? 200 : 404, { 'content-type': 'application/json' }).end(JSON.stringify(ticket ?? null));
      return;
    }
    if (req.method === 'POST' && req.url === '/tickets') {
      let body = '';
      req.on('data', (chunk: Buffer) => (body += chunk.toString()));
      req.on('end', () => {
        const key = String(req.headers['idempotency-key']);
        let ticket = tickets.find((t) => t.idempotencyKey === key); // the API's own idempotency
        if (!ticket) {
          ticket = { id: `T-${tickets.length + 1001}`, title: (JSON.parse(body) as { title: string }).title, idempotencyKey: key };
          writeFileSync(ticketsFile, JSON.stringify([...tickets, ticket]));
        }
        res.writeHead(201, { 'content-type': 'application/json' }).end(JSON.stringify(ticket));
      });
      return;
    }
    res.writeHead(404).end();
  });
  return new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve(server)));
}

const api = await startTicketApi();
const base = `http://127.0.0.1:${(api.address() as AddressInfo).port}`;

// ---- The tools.

function searchLogs(query: string): string {
  // ~300 KB of log lines: more than a state field may hold (256 KiB).
  return Array.from({ length: 5000 }, (_, i) => `2026-01-01T00:${String(i % 60).padStart(2, '0')}:00Z ${i % 7 === 0 ? query : 'status=200'} upstream=billing latency=${(i * 37) % 900}ms`).join('\n');
}

async function lookupCustomer(id: string): Promise<string> {
  return `${id} (Acme Corp, plan: team)`;
}

async function openTicket(title: string, idempotencyKey: string): Promise<Ticket> {
  const res = await fetch(`${base}/tickets`, { method: 'POST', headers: { 'idempotency-key': idempotencyKey, 'content-type': 'application/json' }, body: JSON.stringify({ title }) });
  const ticket = (await res.json()) as Ticket;
  if (process.env.CRASH_AFTER_TICKET === '1') {
    // The marked crash point: the ticket exists, cairn has its intent but no outcome yet.
    console.log(`ticket ${ticket.id} created; crashing before the outcome is recorded`);
    process.kill(process.pid, 'SIGKILL');
  }
  return ticket;
}

async function findTicket(idempotencyKey: string): Promise<Ticket | null> {
  const res = await fetch(`${base}/tickets/by-key/${encodeURIComponent(idempotencyKey)}`);
  const ticket = res.status === 200 ? ((await res.json()) as Ticket) : null;
  console.log(`probe ${idempotencyKey}: ${ticket ? `found ${ticket.id}, not posting again` : 'absent, posting'}`);
  return ticket;
}

// ---- The graph: model ⇄ tools until the model answers without a tool call.

type S = StateOf<typeof State>;
const lastCall = (s: S) => s.messages.at(-1)?.call;

const app = graph(State)
  .node('model', async (s, ctx) => ({ messages: [await ctx.record('model', () => fakeModel(s.messages))] }))
  .node('tools', async (s, ctx) => {
    const call = lastCall(s)!;
    switch (call.name) {
      case 'search_logs': {
        const ref = await ctx.recordArtifact('search_logs', () => searchLogs(call.args.query!), { mediaType: 'text/plain' });
        return { messages: [{ role: 'tool', content: `${ref.size_bytes} bytes of logs, kept as artifact ${ref.id.slice(0, 12)}…`, artifact: ref }] };
      }
      case 'lookup_customer':
        return { messages: [{ role: 'tool', content: await ctx.record('lookup_customer', () => lookupCustomer(call.args.id!)) }] };
      case 'open_ticket': {
        const ticket = await ctx.effect('open_ticket', {
          idempotencyKey: `${THREAD}/open_ticket`,
          args: call.args,
          run: (key) => openTicket(call.args.title!, key),
          probe: (key) => findTicket(key),
        });
        return { messages: [{ role: 'tool', content: `ticket ${ticket.id} opened` }] };
      }
    }
  })
  .edge(START, 'model')
  .conditionalEdge('model', (s) => (lastCall(s) ? 'tools' : END))
  .edge('tools', 'model')
  .compile({ engine: sqlite(join(dir, 'agent.db')), artifacts: fsArtifacts(join(dir, 'artifacts')) });

const thread = await app.getThread({ thread: THREAD });
const result = thread
  ? await app.run({ thread: THREAD }) // a restart: continue from the last committed step
  : await app.run({ thread: THREAD, input: { messages: [{ role: 'user', content: 'Why does cust_42 see 503s?' }] } });

for (const m of result.state.messages) console.log(`${m.role.padEnd(9)} ${m.content}${m.call ? ` → ${m.call.name}(${JSON.stringify(m.call.args)})` : ''}`);
const logs = result.state.messages.find((m) => m.artifact)!.artifact!;
const text = await loadValue<string>(fsArtifacts(join(dir, 'artifacts')), logs); // verified read
console.log(`artifact: ${text.split('\n').filter((l) => l.includes('status=503')).length} matching log lines`);
const posts = readFileSync(requestLog, 'utf8').split('\n').filter((l) => l.startsWith('POST')).length;
console.log(`status: ${result.status}; the ticket API saw ${posts} POST`);
api.close();
