/**
 * Where the page is, kept in the URL's hash so a reload or a shared link opens the
 * same view (the query, with the token, is left alone):
 * `#/` threads · `#/t/<id>` a thread · `#/t/<id>/seq/<n>` a position ·
 * `#/t/<id>/diff/<from>/<to>` a diff; `?ns=<namespace>` for a child run's positions ·
 * `#/evaluate?<selection>` an evaluation (`threads=a,b`, or the list's filters and `limit`; `saved=1` the loaded report).
 */
import { useEffect, useState } from 'preact/hooks';

export type Route =
  | { view: 'threads' }
  | { view: 'thread'; id: string; ns: string }
  | { view: 'position'; id: string; ns: string; seq: number }
  | { view: 'diff'; id: string; ns: string; from: number; to: number }
  | { view: 'evaluate'; query: string };

export function parseRoute(hash: string): Route {
  const [path = '', query = ''] = hash.replace(/^#/, '').split('?');
  const ns = new URLSearchParams(query).get('ns') ?? '';
  const parts = path.split('/').filter(Boolean);
  if (parts[0] === 'evaluate') return { view: 'evaluate', query };
  if (parts[0] !== 't' || parts[1] === undefined) return { view: 'threads' };
  const id = decodeURIComponent(parts[1]);
  if (parts[2] === 'seq' && parts[3] !== undefined) return { view: 'position', id, ns, seq: Number(parts[3]) };
  if (parts[2] === 'diff' && parts[3] !== undefined && parts[4] !== undefined) return { view: 'diff', id, ns, from: Number(parts[3]), to: Number(parts[4]) };
  return { view: 'thread', id, ns };
}

/** The hash of a route. */
export function href(route: Route): string {
  const ns = 'ns' in route && route.ns ? `?ns=${encodeURIComponent(route.ns)}` : '';
  switch (route.view) {
    case 'threads':
      return '#/';
    case 'thread':
      return `#/t/${encodeURIComponent(route.id)}${ns}`;
    case 'position':
      return `#/t/${encodeURIComponent(route.id)}/seq/${route.seq}${ns}`;
    case 'diff':
      return `#/t/${encodeURIComponent(route.id)}/diff/${route.from}/${route.to}${ns}`;
    case 'evaluate':
      return `#/evaluate${route.query ? `?${route.query}` : ''}`;
  }
}

/** The current route, following the hash. */
export function useRoute(): Route {
  const [route, setRoute] = useState(() => parseRoute(location.hash));
  useEffect(() => {
    const onChange = () => setRoute(parseRoute(location.hash));
    addEventListener('hashchange', onChange);
    return () => removeEventListener('hashchange', onChange);
  }, []);
  return route;
}
