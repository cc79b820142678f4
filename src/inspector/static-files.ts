/**
 * @module inspector/static-files
 * The built single-page app (`dist/inspector-ui/`, made by `npm run build`), served
 * as files: `/` is its `index.html`, `/assets/…` its scripts and styles. Nothing is
 * fetched from elsewhere (no CDN): the page works without a network.
 */
import { readFile } from 'node:fs/promises';
import { extname, join, normalize, sep } from 'node:path';
import { fileURLToPath } from 'node:url';

/** Where the built UI lives next to the compiled server (`dist/inspector/` → `dist/inspector-ui/`). */
export const DEFAULT_UI_DIR = fileURLToPath(new URL('../inspector-ui/', import.meta.url));

const TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.ico': 'image/x-icon',
  '.json': 'application/json; charset=utf-8',
};

/** A file of the UI: its bytes and content type, or null when there is none at `pathname`. */
export async function uiFile(uiDir: string, pathname: string): Promise<{ body: Buffer; type: string } | null> {
  let decoded: string;
  try {
    decoded = decodeURIComponent(pathname);
  } catch {
    // Escapes that are not UTF-8 (`/%ff`) name no file.
    return null;
  }
  const relative = pathname === '/' ? 'index.html' : decoded.replace(/^\/+/, '');
  const root = normalize(uiDir.endsWith(sep) ? uiDir : uiDir + sep);
  const path = normalize(join(root, relative));
  // A path that climbs out of the UI's folder (`/../../etc/passwd`) is no file of it.
  if (!path.startsWith(root)) return null;
  try {
    return { body: await readFile(path), type: TYPES[extname(path)] ?? 'application/octet-stream' };
  } catch {
    return null;
  }
}
