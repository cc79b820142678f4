/**
 * @module inspector/auth
 * The web inspector's access token, as Jupyter does it: 32 random bytes, hex, in the
 * URL the command prints (`?token=…`). Every request must carry it, in the query or
 * in the cookie the first page load sets (`HttpOnly; SameSite=Strict`, so neither
 * the page's scripts nor another site's requests can use it). Compared in constant
 * time, so response timing does not leak it byte by byte.
 */
import { randomBytes, timingSafeEqual } from 'node:crypto';
import type { IncomingMessage } from 'node:http';

/** A fresh access token: 32 random bytes as 64 hex characters. */
export function newToken(): string {
  return randomBytes(32).toString('hex');
}

/**
 * The cookie's name for the inspector on `port`: cookies are kept per host, not per
 * port, so two inspectors on one machine would otherwise overwrite each other's.
 */
export function cookieName(port: number): string {
  return `cairn_inspector_${port}`;
}

/** True when `given` is the token; constant-time over the token's length. */
export function sameToken(given: string | undefined | null, token: string): boolean {
  if (typeof given !== 'string') return false;
  const a = Buffer.from(given, 'utf8');
  const b = Buffer.from(token, 'utf8');
  // timingSafeEqual needs equal lengths; the length of a token is no secret.
  return a.length === b.length && timingSafeEqual(a, b);
}

/** The value of cookie `name` in a request's `Cookie` header, if any. */
export function readCookie(request: IncomingMessage, name: string): string | undefined {
  for (const part of (request.headers.cookie ?? '').split(';')) {
    const at = part.indexOf('=');
    if (at > 0 && part.slice(0, at).trim() === name) return part.slice(at + 1).trim();
  }
  return undefined;
}

/** How a request proved it may read: the query token (a first load: set the cookie), the cookie, or not at all. */
export type Access = 'query' | 'cookie' | 'denied';

/** Which way, if any, `request` (whose URL is `url`) carries the token. */
export function access(request: IncomingMessage, url: URL, token: string, port: number): Access {
  if (sameToken(url.searchParams.get('token'), token)) return 'query';
  if (sameToken(readCookie(request, cookieName(port)), token)) return 'cookie';
  return 'denied';
}

/** The `Set-Cookie` header that keeps the token for the page's later requests. */
export function tokenCookie(token: string, port: number): string {
  return `${cookieName(port)}=${token}; Path=/; HttpOnly; SameSite=Strict`;
}
