/**
 * @module internal/lifecycle
 * The guard around every engine and artifact store: lazy opening on first use, no
 * call after `close()` (EngineClosedError), closing once. The base classes
 * (`BaseCheckpointer`, `BaseLedger`, `BaseStore`, `BaseArtifactStore`) run every
 * storage call through {@link Lifecycle.run}, so an engine implements storage only
 * and has no check of its own to remember.
 *
 * @example
 * ```ts
 * const lifecycle = new Lifecycle('sqlite', { open: () => openFile(), close: () => db.close() });
 * await lifecycle.run(() => readRow(id)); // opens on the first call; EngineClosedError after close()
 * ```
 */
import { CairnError, EngineClosedError, EngineError } from '../errors.js';

/** What an engine does when it opens and when it closes. */
export interface LifecycleHooks {
  /**
   * Opens the engine (driver, file, pool, migrations) before its first storage call.
   * A failure is reported to that call and tried again by the next one.
   */
  open?: () => void | Promise<void>;
  /** Releases what `open` took. Runs once, after an open under way has settled, even if none succeeded. */
  close?: () => void | Promise<void>;
}

const DONE = Promise.resolve();

/**
 * An engine's open and close: opened lazily by the first call (a failed open is tried
 * again by the next), `EngineClosedError` for every call after close, closed once.
 * Shared by an engine's parts, so closing one closes them all.
 */
export class Lifecycle {
  private opened = false;
  private closed = false;
  private opening: Promise<void> | undefined;
  private closing: Promise<void> | undefined;

  constructor(
    readonly engine: string,
    private readonly hooks: LifecycleHooks = {},
  ) {}

  /** Opens the engine unless it is open; throws EngineClosedError once closed. */
  use(): Promise<void> {
    if (this.closed) return Promise.reject(this.closedError());
    if (this.opened) return DONE;
    if (!this.opening) {
      let result: void | Promise<void>;
      try {
        result = this.hooks.open?.();
      } catch (error) {
        return Promise.reject(error);
      }
      // A synchronous open (SQLite) is done now: nothing else may run it again.
      if (!(result instanceof Promise)) {
        this.opened = true;
        return DONE;
      }
      this.opening = result.then(
        () => {
          this.opened = true;
        },
        (error: unknown) => {
          this.opening = undefined;
          throw error;
        },
      );
    }
    return this.opening;
  }

  /** {@link use} for an engine whose open is synchronous: opens now or throws. */
  useSync(): void {
    this.assertOpen();
    if (this.opened) return;
    if (this.opening) throw new EngineError(`the ${this.engine} engine is still opening; await a call first.`, { place: { engine: this.engine } });
    const result = this.hooks.open?.();
    if (result instanceof Promise) throw new EngineError(`the ${this.engine} engine opens asynchronously; use() it.`, { place: { engine: this.engine } });
    this.opened = true;
  }

  /**
   * Runs one storage call: opens the engine first if needed, refuses once closed. A
   * driver failure of a call that raced `close()` is reported as EngineClosedError
   * (with the failure as `cause`); cairn's own errors pass as they are.
   */
  run<T>(fn: () => T | Promise<T>): Promise<T> {
    if (this.opened && !this.closed) return this.call(fn);
    return this.use().then(() => this.call(fn));
  }

  private async call<T>(fn: () => T | Promise<T>): Promise<T> {
    try {
      return await fn();
    } catch (error) {
      if (!this.closed || (CairnError.is(error) && !EngineError.is(error))) throw error;
      throw this.closedError(error);
    }
  }

  assertOpen(): void {
    if (this.closed) throw this.closedError();
  }

  get isClosed(): boolean {
    return this.closed;
  }

  /** Closes once (every later call throws EngineClosedError), then runs the close hook. Closing again waits for the first. */
  close(): Promise<void> {
    this.closing ??= (async () => {
      this.closed = true;
      await this.opening?.catch(() => undefined);
      await this.hooks.close?.();
    })();
    return this.closing;
  }

  private closedError(cause?: unknown): EngineClosedError {
    return new EngineClosedError(`the ${this.engine} engine is closed; create a new one.`, {
      place: { engine: this.engine },
      ...(cause !== undefined ? { cause } : {}),
    });
  }
}
