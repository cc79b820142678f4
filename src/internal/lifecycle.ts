/**
 * @module internal/lifecycle
 * The guard every engine keeps: lazy initialisation on first use, and a clear
 * error for any call after `close()`.
 */
import { EngineClosedError } from '../errors.js';

export class Lifecycle {
  private closed = false;
  private ready: Promise<void> | undefined;

  constructor(
    private readonly engine: string,
    private readonly init: () => void | Promise<void>,
  ) {}

  /** Throws if closed; runs `init` once. */
  async use(): Promise<void> {
    this.assertOpen();
    this.ready ??= Promise.resolve().then(this.init);
    return this.ready;
  }

  /** Synchronous variant for engines whose init is synchronous. */
  useSync(): void {
    this.assertOpen();
    if (!this.ready) {
      const result = this.init();
      this.ready = Promise.resolve(result);
    }
  }

  assertOpen(): void {
    if (this.closed) throw new EngineClosedError(`the ${this.engine} engine is closed; create a new one.`, { place: { engine: this.engine } });
  }

  get isClosed(): boolean {
    return this.closed;
  }

  /** Marks closed; returns false if it already was. */
  close(): boolean {
    if (this.closed) return false;
    this.closed = true;
    return true;
  }
}
