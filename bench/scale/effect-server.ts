/**
 * @module bench/scale/effect-server
 * The external system every contender's steps call: a local HTTP server that applies
 * each idempotency key once (`POST /apply`, header `idempotency-key`) and counts every
 * request per key, so the bench can say that each step's effect landed once (and how
 * many duplicate requests the keys absorbed). `onApply` lets the recovery run kill a
 * worker at an exact step.
 */
import { Agent, createServer, request, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface EffectServer {
  url: string;
  /** Keys applied (first request of each). */
  applied(): number;
  /** Requests beyond the first for a key, summed. */
  duplicates(): number;
  /** Forgets every key (between measurements). */
  reset(): void;
  /**
   * Called with the count of applied keys after each new one, and when the connection
   * that carried it was opened (ms, `performance.now()` time origin): a request already
   * in flight from a killed process arrives on a connection older than the kill.
   */
  onApply: ((applied: number, key: string, connectedAt: number) => void) | undefined;
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
    if (seen === 0) self.onApply?.(requests.size, key, connectedAt.get(req.socket) ?? 0);
  });
  const connectedAt = new WeakMap<object, number>();
  server.on('connection', (socket) => connectedAt.set(socket, performance.timeOrigin + performance.now()));
  server.keepAliveTimeout = 60_000;
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  self.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return self;
}

/**
 * The client side: one keep-alive agent per process. `node:http` rather than `fetch`:
 * undici's fetch costs about 0.3 ms of CPU per request here against 0.13 ms, and the
 * bench measures the contenders, not their HTTP client (every contender calls this).
 */
const agent = new Agent({ keepAlive: true, maxSockets: 256 });

/** One keyed effect: what a step of every contender calls. */
export function applyEffect(url: string, key: string): Promise<void> {
  const target = new URL('/apply', url);
  return new Promise((resolve, reject) => {
    const req = request({ host: target.hostname, port: target.port, path: target.pathname, method: 'POST', agent, headers: { 'idempotency-key': key, 'content-length': '0' } }, (res) => {
      res.resume(); // drain the (empty) body so the socket returns to the agent
      res.on('end', () => (res.statusCode! >= 200 && res.statusCode! < 300 ? resolve() : reject(new Error(`effect server answered ${res.statusCode}`))));
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end();
  });
}
