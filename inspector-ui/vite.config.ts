/**
 * The web inspector's page: a Preact single-page app, built by `npm run build` into
 * dist/inspector-ui/, which `cairn inspect` serves as static files. Relative asset
 * paths (`base: './'`), and nothing loaded from a CDN.
 */
import { fileURLToPath } from 'node:url';
import preact from '@preact/preset-vite';
import { defineConfig } from 'vite';

const here = fileURLToPath(new URL('.', import.meta.url));

export default defineConfig({
  root: here,
  base: './',
  plugins: [preact({ devToolsEnabled: false, prefreshEnabled: false })],
  build: {
    outDir: fileURLToPath(new URL('../dist/inspector-ui/', import.meta.url)),
    emptyOutDir: true,
    // One small bundle; no modulepreload polyfill that would inline a script.
    modulePreload: { polyfill: false },
  },
});
