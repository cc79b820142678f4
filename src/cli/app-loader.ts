/**
 * @module cli/app-loader
 * Loads the application's code for the commands that run it (`worker`, `resume`,
 * `replay`, `fork`) and its state schema (`migrate --state`): `--app <file>[#export]`.
 * The file is an ES module; a `.ts` (`.mts`, `.cts`, `.tsx`) file is loaded through
 * tsx when it is installed (its ESM API, `tsImport`), else refused with how to get
 * it. The export (named after `#`; else `default`, `app` or `createApp`) is a compiled
 * graph, or a function (given the engine `--db` opens) or promise that returns one.
 * A compiled graph is run on `--db`'s engine, so the command always works on the
 * database it names.
 *
 * @example
 * ```ts
 * const { app, dispose } = await loadApp('./dist/app.js#support', engine);
 * try { await app.replay({ thread: 't1', from: 0 }); } finally { await dispose(); }
 * ```
 */
import { existsSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import type { Engine } from '../contracts/engine.js';
import { InvalidOptionError } from '../errors.js';
import type { App } from '../runtime/app.js';
import type { StateSchema } from '../state/schema.js';

/** What `--app` takes, for the help. */
export const APP_ARG = '<module#export>';

/** What {@link APP_ARG} means, for the help. */
export const APP_HELP =
  'the application: an ES module (.js, or .ts through tsx) and its export after # (default: default, app or createApp): a compiled graph, or a function of the engine (or promise) returning one';

/** A loaded application and how to let go of what loading it opened. */
export interface LoadedApp {
  app: App<StateSchema>;
  /** Closes the engine the module opened for itself, if it did (not the one passed in). */
  dispose(): Promise<void>;
}

const TYPESCRIPT = /\.(c|m)?tsx?$/i;

/** Splits `<file>[#export]`. */
export function parseModuleSpec(spec: string): { file: string; name: string | undefined } {
  const hash = spec.lastIndexOf('#');
  return hash > 0 ? { file: spec.slice(0, hash), name: spec.slice(hash + 1) || undefined } : { file: spec, name: undefined };
}

/**
 * Finds tsx's ESM API (`tsx/esm/api`, its `import` entry): from the module's own
 * folder first (the application's dependencies), then from cairn's. Undefined when
 * neither has tsx.
 */
function tsxApi(path: string): string | undefined {
  for (const from of [path, fileURLToPath(import.meta.url)]) {
    try {
      const manifest = createRequire(from).resolve('tsx/package.json');
      const { exports } = JSON.parse(readFileSync(manifest, 'utf8')) as { exports?: Record<string, unknown> };
      const entry = exports?.['./esm/api'] as string | { import?: string | { default?: string } } | undefined;
      const target = typeof entry === 'string' ? entry : typeof entry?.import === 'string' ? entry.import : entry?.import?.default;
      if (target) return join(dirname(manifest), target);
    } catch {
      // not installed there
    }
  }
  return undefined;
}

/**
 * Imports the ES module at `file` (a `.ts` file through tsx). InvalidOptionError (bad
 * usage) when there is no such file, or for a `.ts` file without tsx installed.
 */
export async function importModule(file: string, options: { resolveTsx?: (path: string) => string | undefined } = {}): Promise<Record<string, unknown>> {
  const path = resolve(file);
  if (!existsSync(path)) throw new InvalidOptionError(`no module at ${path}: give the path of an ES module (.js or .ts).`);
  if (!TYPESCRIPT.test(path)) return (await import(pathToFileURL(path).href)) as Record<string, unknown>;
  const api = (options.resolveTsx ?? tsxApi)(path);
  if (api === undefined) throw new InvalidOptionError(`${file} is TypeScript: loading it needs tsx. Install it (npm install -D tsx), or build the module and pass the .js file.`);
  const { tsImport } = (await import(pathToFileURL(api).href)) as { tsImport: (specifier: string, parent: string) => Promise<Record<string, unknown>> };
  return tsImport(pathToFileURL(path).href, import.meta.url);
}

/** A compiled graph, recognised by shape (the module may hold another copy of cairn). */
function isApp(value: unknown): value is App<StateSchema> {
  if (typeof value !== 'object' || value === null) return false;
  const app = value as Partial<App<StateSchema>>;
  return typeof app.resume === 'function' && typeof app.replay === 'function' && typeof app.fork === 'function' && typeof app.spec === 'object' && typeof app.options === 'object';
}

/**
 * Loads the application `spec` (`<file>[#export]`) names, bound to `engine`.
 * InvalidOptionError (bad usage) when the module or export is missing or is not a
 * compiled graph (nor a function or promise of one).
 */
export async function loadApp(spec: string, engine: Engine): Promise<LoadedApp> {
  const { file, name } = parseModuleSpec(spec);
  const module = await importModule(file);
  const names = name !== undefined ? [name] : ['default', 'app', 'createApp'];
  const found = names.find((n) => module[n] !== undefined);
  if (found === undefined) {
    throw new InvalidOptionError(
      name !== undefined
        ? `${file} has no export "${name}" (it exports ${Object.keys(module).join(', ') || 'nothing'}).`
        : `${file} exports no default, app or createApp: name the export with ${file}#<export>.`,
    );
  }
  let value = module[found];
  // A TypeScript module tsx loads as CommonJS hands its exports over as `default`.
  if (typeof value === 'object' && value !== null && !isApp(value) && 'default' in value && (name === undefined || name === 'default')) {
    const inner = value as Record<string, unknown>;
    value = inner.default;
  }
  if (typeof value === 'function') value = (value as (engine: Engine) => unknown)(engine);
  value = await value;
  if (!isApp(value)) throw new InvalidOptionError(`${file}#${found} is not a compiled graph (graph(State)...compile(), or a function of the engine returning one).`);
  const loaded = value;
  if (loaded.options.engine === engine) return { app: loaded, dispose: async () => undefined };
  // A graph compiled on another engine: the same graph and settings on --db's engine.
  const Rebound = loaded.constructor as new (schema: StateSchema, spec: App<StateSchema>['spec'], options: App<StateSchema>['options']) => App<StateSchema>;
  const app = new Rebound(loaded.schema, loaded.spec, { ...loaded.options, engine });
  return { app, dispose: () => loaded.options.engine.close() };
}
