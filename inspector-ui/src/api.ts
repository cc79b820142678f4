/**
 * The inspector's API, as the page calls it: same-origin GETs (the access token
 * travels in the cookie the first page load set). An error answer is thrown as an
 * ApiError with the server's code and message.
 */

/** An answer of the API that was not 200: its `{ error: { code, message } }`. */
export class ApiError extends Error {
  constructor(readonly status: number, readonly code: string, message: string) {
    super(message);
  }
}

/** GET `/api/<path>` with `params` (empty values left out; a list is the parameter repeated); the parsed JSON. */
export async function api<T>(path: string, params: Record<string, string | number | readonly string[] | undefined | null> = {}): Promise<T> {
  const query = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) {
    if (Array.isArray(v)) for (const item of v) query.append(k, item);
    else if (v !== undefined && v !== null && v !== '') query.set(k, String(v));
  }
  const qs = query.toString();
  const response = await fetch(`./api/${path}${qs ? `?${qs}` : ''}`, { credentials: 'same-origin' });
  const body = (await response.json()) as T & { error?: { code: string; message: string } };
  if (!response.ok) throw new ApiError(response.status, body.error?.code ?? 'ERR_HTTP', body.error?.message ?? response.statusText);
  return body;
}

/** The key of the server's stand-in for what JSON cannot carry: `{ "\u0000raw": "10n" }`. */
export const RAW_KEY = '\u0000raw';

/** The text of a stand-in (`undefined`, `10n`, `NaN`…), or null when `v` is a real value. */
export function rawText(v: unknown): string | null {
  if (v && typeof v === 'object' && !Array.isArray(v)) {
    const keys = Object.keys(v);
    if (keys.length === 1 && keys[0] === RAW_KEY) return String((v as Record<string, unknown>)[RAW_KEY]);
  }
  return null;
}

export interface ThreadRecord {
  id: string;
  kind: string;
  status: string;
  head: number | null;
  attempts: number;
  tenant: string | null;
  metadata: Record<string, unknown>;
  lastError: { code: string; message: string } | null;
  wakeAt: number | null;
  createdAt: number;
  updatedAt: number;
}

export interface Interrupt {
  id: string;
  node: string;
  when: string;
  payload: unknown;
  answeredAt?: number;
  actor?: string | null;
}

export interface PositionInfo {
  seq: number;
  parent: number | null;
  kind: string;
  nodes: string[];
  next: string[];
  createdAt: number;
  changes: Record<string, string>;
  records: { key: string; name: string }[];
  effects: { key: string; name: string }[];
  interrupts: Interrupt[];
  answered?: string;
  actor?: string;
  waits?: { id: string; kind: string; key: string; until: number | null }[];
  children: string[];
  hash: string;
}

export interface AttemptInfo {
  attempt: number;
  outcome: string;
  node: string | null;
  seq: number | null;
  at: number | null;
  error: { code: string; message: string } | null;
}

export interface LedgerEntry {
  kind: string;
  status: string;
  seq: number;
  node: string;
  name: string;
  key: string;
  outcome?: unknown;
  createdAt: number;
  completedAt?: number | null;
}

export interface VerifyReport {
  ok: boolean;
  positions: number;
  problems: { ns: string; seq: number; kind: string; message: string }[];
}

export type FieldDiff =
  | { field: string; kind: 'added'; after: unknown }
  | { field: string; kind: 'removed'; before?: unknown; from?: number; items?: unknown[] }
  | { field: string; kind: 'appended'; from: number; items: unknown[] }
  | { field: string; kind: 'changed'; before: unknown; after: unknown };

/** A time (ms since the epoch) as ISO 8601; `-` for none. */
export function isoTime(ms: number | null | undefined): string {
  return ms === null || ms === undefined ? '-' : new Date(ms).toISOString();
}
