/**
 * @module testing/faults
 * A storage-fault layer for tests: {@link withFaults} wraps an engine (memory, SQLite,
 * PostgreSQL, yours) so that chosen operations of its checkpointer, ledger and store
 * fail the way a database fails under a run: the Nth matching call once, every call
 * from the Nth on, or the Nth call completing and its caller then getting a timeout
 * (the ambiguous commit: it landed, the caller cannot know). A test then proves what
 * the contracts promise: the run stops with a typed error, and running the thread
 * again completes it with no step lost and no keyed effect applied twice.
 *
 * The wrapper is generic: every method and property of the three parts passes
 * through a Proxy (capabilities, optional methods, methods added later), so it never
 * lags behind the contracts; a fault names the operation it hits as `part.method`
 * (`checkpointer.commitStep`, `ledger.writeOutcome`, `store.put`). Calls made on a
 * store's principal views (`store.as(p)`, what nodes use) count as the store's. One call
 * of the contract is one op, whatever it does inside (`store.update`'s rounds are its own).
 *
 * @example
 * ```ts
 * const engine = withFaults(sqlite(file), [{ op: 'checkpointer.commitStep', nth: 2, kind: 'commitThenTimeout' }]);
 * await expect(app(engine).run({ thread: 't' })).rejects.toMatchObject({ code: 'ERR_ENGINE' });
 * engine.faults.clear();
 * await app(engine).run({ thread: 't' });   // completes: step 2 is not run again
 * ```
 */
import type { Engine } from '../contracts/engine.js';
import { EngineError, InvalidOptionError } from '../errors.js';

/** The parts of an engine a fault can hit. */
export type FaultPart = 'checkpointer' | 'ledger' | 'store';

/** One call of an engine operation, as fault rules and the call log see it. */
export interface EngineCall {
  /** `part.method`: `checkpointer.commitStep`, `ledger.writeIntent`, `store.put`… */
  op: string;
  part: FaultPart;
  method: string;
  args: readonly unknown[];
  /** Which call of this op this is on the engine, counting from 1. */
  n: number;
}

/**
 * What a fault does to the call it hits:
 * - `fail`: the operation is not performed; the caller gets an EngineError, as when the
 *   database refused it or the connection broke before it was sent;
 * - `commitThenTimeout`: the operation is performed (and committed), then the caller
 *   gets an EngineError whose cause is a timeout: it cannot tell whether it landed;
 * - `pass`: the operation is performed normally; only the rule's `before` hook runs
 *   (to arrange a live fault, such as killing a connection, at an exact call).
 */
export type FaultKind = 'fail' | 'commitThenTimeout' | 'pass';

/** One fault: which calls it hits, from which one on, how many times, and how. */
export interface FaultRule {
  /**
   * The operations it matches: `'checkpointer.commitStep'`, `'ledger.*'`, `'*'`, a
   * RegExp tested on the op, or a predicate on the call. A name that is not a method
   * of the engine's part is InvalidOptionError (a typo would otherwise hit nothing).
   */
  op: string | RegExp | ((call: EngineCall) => boolean);
  /** The matching call it first hits, counting from 1 among the calls it matches. Default 1. */
  nth?: number;
  /** How many matching calls it hits from the `nth` on: a count, or `'forever'`. Default 1. */
  times?: number | 'forever';
  /** Default `fail`. */
  kind?: FaultKind;
  /** The error the caller gets instead of the EngineError the layer builds (a raw driver error, say). */
  error?: (call: EngineCall) => unknown;
  /** Awaited before the hit call goes on (for a `pass` rule, its whole point). */
  before?: (call: EngineCall) => void | Promise<void>;
}

/** A fault that hit a call. */
export interface FiredFault {
  op: string;
  n: number;
  kind: FaultKind;
}

/** The driver-side error an injected fault's EngineError carries as its `cause`. */
export class InjectedFault extends Error {
  /** `EFAULT_INJECTED` for a failed call, `ETIMEDOUT` for one that completed, then timed out. */
  readonly code: string;
  constructor(
    readonly call: Pick<EngineCall, 'op' | 'n'>,
    readonly kind: Exclude<FaultKind, 'pass'>,
  ) {
    super(
      kind === 'fail'
        ? `injected fault: ${call.op} call ${call.n} failed before it reached storage`
        : `injected fault: ${call.op} call ${call.n} completed, then the caller timed out waiting for its answer`,
    );
    this.name = 'InjectedFault';
    this.code = kind === 'fail' ? 'EFAULT_INJECTED' : 'ETIMEDOUT';
  }
}

/** The faults of a {@link FaultyEngine}: add or clear rules, read what was called and what was hit. */
export interface FaultController {
  /** Adds rules (after the ones already there; the first rule that hits a call decides it). */
  add(...rules: FaultRule[]): void;
  /** Removes every rule: the engine works normally again. The call log is kept. */
  clear(): void;
  /** Every call made through the wrapper, in order, as `part.method`. */
  readonly calls: readonly string[];
  /** Every call a fault hit, in order. */
  readonly fired: readonly FiredFault[];
  /** How many calls of `op` were made. */
  count(op: string): number;
}

/** An engine with a fault layer: the engine's own parts behind it, and its {@link FaultController}. */
export type FaultyEngine<E extends Engine = Engine> = E & { readonly faults: FaultController };

/** Methods that reach no storage and answer synchronously (declarations, policies, views): never hit by a fault. */
const LOCAL_METHODS = new Set(['declare', 'mergeRuleOf', 'setPolicy', 'as', 'close']);
/** Methods returning a view on the same storage, whose calls count as the part's own. */
const VIEW_METHODS = new Set(['as']);
const PARTS: readonly FaultPart[] = ['checkpointer', 'ledger', 'store'];

interface ArmedRule {
  rule: FaultRule;
  matches: (call: EngineCall) => boolean;
  seen: number;
  hits: number;
}

class Faults implements FaultController {
  private rules: ArmedRule[] = [];
  private readonly counts = new Map<string, number>();
  readonly calls: string[] = [];
  readonly fired: FiredFault[] = [];

  constructor(
    private readonly engine: Engine,
    rules: readonly FaultRule[],
  ) {
    this.add(...rules);
  }

  add(...rules: FaultRule[]): void {
    for (const rule of rules) this.rules.push({ rule, matches: this.matcher(rule), seen: 0, hits: 0 });
  }

  clear(): void {
    this.rules = [];
  }

  count(op: string): number {
    return this.counts.get(op) ?? 0;
  }

  /** One call of `part.method` through the layer: logged, and hit by the first rule that fires on it. */
  invoke(part: FaultPart, method: string, args: unknown[], perform: () => unknown): unknown {
    const op = `${part}.${method}`;
    const n = (this.counts.get(op) ?? 0) + 1;
    this.counts.set(op, n);
    this.calls.push(op);
    if (LOCAL_METHODS.has(method)) return perform();
    const call: EngineCall = { op, part, method, args, n };
    const armed = this.firing(call);
    if (!armed) return perform();
    const kind = armed.rule.kind ?? 'fail';
    this.fired.push({ op, n, kind });
    const hit = async () => {
      await armed.rule.before?.(call);
      if (kind === 'pass') return perform();
      if (kind === 'commitThenTimeout') await perform();
      throw this.errorFor(armed.rule, call, kind);
    };
    return hit();
  }

  /** The first rule that matches `call` and is due to hit it (each matching rule counts the call). */
  private firing(call: EngineCall): ArmedRule | undefined {
    let chosen: ArmedRule | undefined;
    for (const armed of this.rules) {
      if (!armed.matches(call)) continue;
      armed.seen++;
      const times = armed.rule.times === 'forever' ? Infinity : (armed.rule.times ?? 1);
      if (!chosen && armed.seen >= (armed.rule.nth ?? 1) && armed.hits < times) {
        armed.hits++;
        chosen = armed;
      }
    }
    return chosen;
  }

  private errorFor(rule: FaultRule, call: EngineCall, kind: 'fail' | 'commitThenTimeout'): unknown {
    if (rule.error) return rule.error(call);
    const cause = new InjectedFault(call, kind);
    // Worded like the engines' own driver failures: `<operation> failed (<code>): <driver's message>.`
    const operation = call.part === 'store' ? call.op : call.method;
    return new EngineError(`${operation} failed (${cause.code}): ${cause.message}.`, { cause, place: { engine: this.engine.name }, retryable: true });
  }

  private matcher(rule: FaultRule): (call: EngineCall) => boolean {
    const { op } = rule;
    if (typeof op === 'function') return op;
    if (op instanceof RegExp) return (call) => op.test(call.op);
    if (typeof op !== 'string') throw new InvalidOptionError(`a fault's op must be a string, a RegExp or a function, got ${typeof op}.`);
    if (op === '*') return () => true;
    const [part, method, ...rest] = op.split('.');
    if (!PARTS.includes(part as FaultPart) || method === undefined || method === '' || rest.length) {
      throw new InvalidOptionError(`fault op ${JSON.stringify(op)} is not "part.method" with part one of ${PARTS.join(', ')} (or "part.*", or "*").`);
    }
    if (method === '*') return (call) => call.part === part;
    const target = this.engine[part as FaultPart] as unknown as Record<string, unknown>;
    if (typeof target[method] !== 'function') {
      throw new InvalidOptionError(`fault op ${JSON.stringify(op)} names no method of this ${this.engine.name} engine's ${part}.`);
    }
    if (LOCAL_METHODS.has(method)) throw new InvalidOptionError(`fault op ${JSON.stringify(op)} reaches no storage; a fault cannot hit it.`);
    return (call) => call.op === op;
  }
}

/** `target` with every method call going through `faults` as `part.method`; properties pass through. */
function wrapPart<T extends object>(part: FaultPart, target: T, faults: Faults): T {
  const wrappers = new WeakMap<Function, Function>();
  return new Proxy(target, {
    get(object, property) {
      const value: unknown = Reflect.get(object, property, object);
      if (typeof value !== 'function' || typeof property !== 'string' || property === 'constructor') return value;
      let wrapper = wrappers.get(value);
      if (!wrapper) {
        const method = property;
        const fn = value as (...args: unknown[]) => unknown;
        wrapper = (...args: unknown[]) =>
          faults.invoke(part, method, args, () => {
            const result = fn.apply(object, args);
            return VIEW_METHODS.has(method) && typeof result === 'object' && result !== null ? wrapPart(part, result, faults) : result;
          });
        wrappers.set(value, wrapper);
      }
      return wrapper;
    },
  });
}

/**
 * Wraps `engine` in a fault layer armed with `rules` (more can be added, or all
 * cleared, through `engine.faults`). Closing the wrapper closes the engine.
 *
 * @example
 * ```ts
 * // The third effect outcome fails once; from the fifth commit on, every commit fails.
 * const engine = withFaults(memory(), [
 *   { op: 'ledger.writeOutcome', nth: 3 },
 *   { op: 'checkpointer.commitStep', nth: 5, times: 'forever' },
 * ]);
 * ```
 */
export function withFaults<E extends Engine>(engine: E, rules: readonly FaultRule[] = []): FaultyEngine<E> {
  const faults = new Faults(engine, rules);
  const parts = new Map<PropertyKey, unknown>(PARTS.map((part) => [part, wrapPart(part, engine[part], faults)]));
  return new Proxy(engine, {
    get(object, property) {
      if (property === 'faults') return faults;
      if (parts.has(property)) return parts.get(property);
      const value: unknown = Reflect.get(object, property, object);
      return typeof value === 'function' ? (value as Function).bind(object) : value;
    },
    has(object, property) {
      return property === 'faults' || Reflect.has(object, property);
    },
  }) as FaultyEngine<E>;
}
