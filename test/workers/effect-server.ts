/**
 * The external system of the takeover tests: a local HTTP server that applies each
 * idempotency key once (`POST /apply` with an `idempotency-key` header) and counts every
 * request per key, so a test can tell a duplicate request (absorbed) from an effect
 * applied twice (two keys for one step); `GET /applied?key=` is the probe.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface EffectServer {
  url: string;
  /** Requests per key, duplicates included. */
  requests: Map<string, number>;
  /** Keys applied, in the order they first arrived. */
  applied: string[];
  close(): Promise<void>;
}

export async function startEffectServer(): Promise<EffectServer> {
  const requests = new Map<string, number>();
  const applied: string[] = [];
  const server: Server = createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://local');
    if (req.method === 'POST' && url.pathname === '/apply') {
      const key = req.headers['idempotency-key'];
      if (typeof key !== 'string' || key === '') return void res.writeHead(400).end();
      const seen = requests.get(key) ?? 0;
      requests.set(key, seen + 1);
      if (seen === 0) applied.push(key);
      return void res.writeHead(seen === 0 ? 201 : 200).end();
    }
    if (req.method === 'GET' && url.pathname === '/applied') {
      return void res.writeHead(requests.has(url.searchParams.get('key') ?? '') ? 200 : 404).end();
    }
    res.writeHead(404).end();
  });
  server.keepAliveTimeout = 60_000;
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    applied,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
