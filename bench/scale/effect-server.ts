/**
 * @module bench/scale/effect-server
 * The external system every contender's steps call: a local HTTP server that applies
 * each idempotency key once (`POST /apply`, header `idempotency-key`) and counts every
 * request per key, so the bench can say that each step's effect landed once (and how
 * many duplicate requests the keys absorbed). `onApply` lets the recovery run kill a
 * worker at an exact step.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface EffectServer {
  url: string;
  /** Keys applied (first request of each). */
  applied(): number;
  /** Requests beyond the first for a key, summed. */
  duplicates(): number;
  /** Forgets every key (between measurements). */
  reset(): void;
  /** Called with the count of applied keys after each new one. */
  onApply: ((applied: number, key: string) => void) | undefined;
  close(): Promise<void>;
}

export async function startEffectServer(): Promise<EffectServer> {
  const requests = new Map<string, number>();
  let duplicates = 0;
  const self: EffectServer = {
    url: '',
    applied: () => requests.size,
    duplicates: () => duplicates,
    reset: () => {
      requests.clear();
      duplicates = 0;
    },
    onApply: undefined,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
  const server: Server = createServer((req, res) => {
    const key = req.headers['idempotency-key'];
    if (req.method !== 'POST' || typeof key !== 'string' || key === '') return void res.writeHead(400).end();
    const seen = requests.get(key) ?? 0;
    requests.set(key, seen + 1);
    if (seen > 0) duplicates++;
    res.writeHead(seen === 0 ? 201 : 200).end();
    if (seen === 0) self.onApply?.(requests.size, key);
  });
  server.keepAliveTimeout = 60_000;
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  self.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return self;
}

/** One keyed effect: what a step of every contender calls. */
export async function applyEffect(url: string, key: string): Promise<void> {
  const response = await fetch(`${url}/apply`, { method: 'POST', headers: { 'idempotency-key': key } });
  if (!response.ok) throw new Error(`effect server answered ${response.status}`);
  await response.arrayBuffer();
}
