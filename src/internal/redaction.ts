/**
 * @module internal/redaction
 * The one place that decides what of a thread's data may be shown. Rules come from
 * the schema (`field.model(schema, { redact: true })`) and from
 * `compile({ redact: { paths, records, effects, patterns } })`; they are kept with
 * the graph's description in the store, so tools without the application's code
 * (the CLI, the inspector, exports) apply the same ones. Every face that shows
 * persisted data (CLI output, the inspector's API, exports, run events and streams,
 * OpenTelemetry attributes, error messages) goes through a {@link Redactor}; none
 * matches on its own. The stored values are never changed.
 *
 * What a rule hides becomes {@link REDACTED}, whole: a string, a number, an object
 * or a list at a redacted path is replaced by the marker; a pattern's match inside a
 * string is replaced by it (the rest of the string stays). A value a path rule hid
 * is remembered by the redactor (its strings of 4 characters or more), so the same
 * text is hidden wherever else the same output repeats it: an interrupt payload, an
 * error message, a recorded output that copied it.
 *
 * @example
 * ```ts
 * const rules = redactionRules({ paths: ['customer.email'], patterns: [/sk-[A-Za-z0-9]{8,}/] });
 * const r = new Redactor(rules);
 * r.state({ customer: { email: 'a@b.c', name: 'Ana' }, note: 'key sk-abcdefgh12' });
 * // { customer: { email: '[redacted]', name: 'Ana' }, note: 'key [redacted]' }
 * ```
 */
import { InvalidOptionError } from '../errors.js';
import { isPlainObject } from './plain-object.js';

/** What a redacted value (or a pattern's match) is shown as. */
export const REDACTED = '[redacted]';

/** Strings shorter than this a path rule hid are not searched for elsewhere (they would hide common words). */
const LEARNED_MIN_LENGTH = 4;

/**
 * Redaction rules as `compile({ redact })` takes them.
 *
 * - `paths`: paths into the state, of the root graph and of every child run:
 *   `customer.email`, `messages[*].content`, `profile.*`, `cards[0]`. A segment
 *   `*` (or `[*]`) matches every key and every list index.
 * - `records`: recorded outputs (`ctx.record(name, …)`) by name: `true` hides the
 *   whole output, a list of paths hides those inside it (`{ crm: ['email'] }`).
 * - `effects`: effect outcomes (`ctx.effect(name, …)`) by name, the same way.
 * - `patterns`: regular expressions matched inside every string anywhere (state,
 *   recorded outputs, effect outcomes, interrupt payloads, signals, store values
 *   shown with a thread, error messages, event data, span attributes); each match
 *   is replaced by the marker. A pattern that matches the empty string is refused.
 */
export interface RedactOptions {
  paths?: readonly string[];
  records?: Readonly<Record<string, true | readonly string[]>>;
  effects?: Readonly<Record<string, true | readonly string[]>>;
  patterns?: readonly (RegExp | string)[];
}

/** Redaction rules as JSON: what the graph's stored description carries (patterns as source and flags). */
export interface RedactionRules {
  paths: string[];
  records: Record<string, true | string[]>;
  effects: Record<string, true | string[]>;
  patterns: { source: string; flags: string }[];
}

/** No rule at all. */
export const NO_RULES: RedactionRules = Object.freeze({ paths: [], records: {}, effects: {}, patterns: [] }) as RedactionRules;

type Segment = { key: string } | { index: number } | { any: true };

/** `a.b[*].c` → segments; InvalidOptionError for a path that does not parse. */
export function parsePath(path: string): Segment[] {
  const segments: Segment[] = [];
  const re = /\.?([^.[\]]+)|\[(\*|\d+)\]/y;
  let at = 0;
  while (at < path.length) {
    re.lastIndex = at;
    const m = re.exec(path);
    if (!m || (at === 0 && path.startsWith('.'))) {
      throw new InvalidOptionError(`redact path ${JSON.stringify(path)}: write keys with dots and list indexes in brackets (customer.email, messages[*].content, profile.*).`);
    }
    if (m[1] !== undefined) segments.push(m[1] === '*' ? { any: true } : { key: m[1] });
    else segments.push(m[2] === '*' ? { any: true } : { index: Number(m[2]) });
    at = re.lastIndex;
  }
  if (!segments.length) throw new InvalidOptionError('redact path "": name a field (customer.email).');
  return segments;
}

/** A pattern as a global RegExp; InvalidOptionError when it does not compile or matches the empty string. */
export function compilePattern(pattern: RegExp | string | { source: string; flags: string }): RegExp {
  const source = typeof pattern === 'string' ? pattern : pattern.source;
  const flags = typeof pattern === 'string' ? '' : pattern.flags;
  let re: RegExp;
  try {
    re = new RegExp(source, flags.includes('g') ? flags.replace('y', '') : `${flags.replace('y', '')}g`);
  } catch (error) {
    throw new InvalidOptionError(`redact pattern /${source}/: ${(error as Error).message}.`);
  }
  if (new RegExp(re.source, re.flags.replace('g', '')).test('')) throw new InvalidOptionError(`redact pattern /${source}/ matches the empty string: it would hide nothing and mark everything.`);
  return re;
}

function pathsOf(map: Readonly<Record<string, true | readonly string[]>> | undefined, what: string): Record<string, true | string[]> {
  const out: Record<string, true | string[]> = {};
  for (const [name, rule] of Object.entries(map ?? {})) {
    if (rule === true) out[name] = true;
    else if (Array.isArray(rule)) {
      for (const p of rule) parsePath(p);
      out[name] = [...rule];
    } else throw new InvalidOptionError(`redact.${what}[${JSON.stringify(name)}]: give true (the whole value) or a list of paths inside it.`);
  }
  return out;
}

/**
 * Checks `options` and returns them as JSON rules (with `fields`, the names of the
 * state fields declared `redact: true`, added to the paths). InvalidOptionError for
 * a path that does not parse or a pattern that does not compile.
 */
export function redactionRules(options: RedactOptions = {}, fields: readonly string[] = []): RedactionRules {
  const paths = [...new Set([...fields, ...(options.paths ?? [])])];
  for (const p of paths) parsePath(p);
  const patterns = (options.patterns ?? []).map((p) => {
    const re = compilePattern(p);
    return { source: re.source, flags: re.flags.replace('g', '') };
  });
  return { paths, records: pathsOf(options.records, 'records'), effects: pathsOf(options.effects, 'effects'), patterns };
}

/** True when `rules` hide anything. */
export function hasRules(rules: RedactionRules): boolean {
  return rules.paths.length > 0 || rules.patterns.length > 0 || Object.keys(rules.records).length > 0 || Object.keys(rules.effects).length > 0;
}

/** Every rule of each of `all` (stored versions of a graph, CLI flags): more hidden is the safe side. */
export function mergeRules(...all: (RedactionRules | undefined)[]): RedactionRules {
  const out: RedactionRules = { paths: [], records: {}, effects: {}, patterns: [] };
  const seen = new Set<string>();
  for (const rules of all) {
    if (!rules) continue;
    for (const p of rules.paths ?? []) if (!out.paths.includes(p)) out.paths.push(p);
    for (const key of ['records', 'effects'] as const) {
      for (const [name, rule] of Object.entries(rules[key] ?? {})) {
        const had = out[key][name];
        out[key][name] = had === true || rule === true ? true : [...new Set([...(had ?? []), ...rule])];
      }
    }
    for (const p of rules.patterns ?? []) {
      const id = `${p.flags}/${p.source}`;
      if (!seen.has(id)) out.patterns.push({ source: p.source, flags: p.flags });
      seen.add(id);
    }
  }
  return out;
}

/** A shallow copy of an object or array (holes and a null prototype kept). */
function shallowCopy<T>(value: T): T {
  if (Array.isArray(value)) {
    const copy = new Array(value.length);
    for (let i = 0; i < value.length; i++) if (i in value) copy[i] = value[i];
    return copy as T;
  }
  return Object.assign(Object.create(Object.getPrototypeOf(value) as object | null) as object, value) as T;
}

/**
 * Applies a set of rules to what a face shows. One per output (a command's answer,
 * an API response, an export, a run's events): it remembers what its path rules
 * hid, and hides the same text where the output repeats it. Pure: it never changes
 * the values it is given, it returns copies.
 */
export class Redactor {
  private readonly paths: Segment[][];
  private readonly records: Map<string, true | Segment[][]>;
  private readonly effects: Map<string, true | Segment[][]>;
  private readonly patterns: RegExp[];
  private readonly learned = new Set<string>();
  private learnedSorted: string[] | undefined;
  /** True when some rule may hide something: a face with an inactive redactor skips the walk. */
  readonly active: boolean;

  constructor(readonly rules: RedactionRules) {
    this.paths = rules.paths.map(parsePath);
    const compiled = (map: Record<string, true | string[]>) => new Map(Object.entries(map).map(([name, rule]) => [name, rule === true ? (true as const) : rule.map(parsePath)]));
    this.records = compiled(rules.records);
    this.effects = compiled(rules.effects);
    this.patterns = rules.patterns.map(compilePattern);
    this.active = hasRules(rules);
  }

  /** A redactor that hides nothing. */
  static none(): Redactor {
    return new Redactor(NO_RULES);
  }

  /** A state (fields by name): its path rules, then the text rules over every string. */
  state<T extends Record<string, unknown>>(state: T): T {
    if (!this.active) return state;
    return this.value(this.atPaths(state, this.paths)) as T;
  }

  /**
   * Remembers what the path rules hide in `state` (fields by name), to hide it where
   * it is repeated (an event, an error message), without building a redacted copy.
   */
  learnState(state: Readonly<Record<string, unknown>>): void {
    if (this.paths.length) this.atPaths(state, this.paths);
  }

  /** One field's value, as {@link Redactor.state} would show it. */
  field(name: string, value: unknown): unknown {
    if (!this.active) return value;
    return this.state({ [name]: value })[name];
  }

  /** Items of list field `name` at indexes `from`, `from + 1`, … (appended items, a diff's), as the whole list would show them. */
  items(name: string, from: number, items: readonly unknown[]): unknown[] {
    if (!this.active) return [...items];
    const list = new Array(from + items.length);
    items.forEach((item, i) => (list[from + i] = item));
    return (this.field(name, list) as unknown[]).slice(from);
  }

  /** A recorded output of `ctx.record(name, …)`. */
  record(name: string, value: unknown): unknown {
    return this.called(this.records.get(name), value);
  }

  /** An effect outcome of `ctx.effect(name, …)`. */
  effect(name: string, value: unknown): unknown {
    return this.called(this.effects.get(name), value);
  }

  /** A ledger entry's outcome, by its kind and name. */
  outcome(kind: 'record' | 'effect', name: string, value: unknown): unknown {
    return kind === 'record' ? this.record(name, value) : this.effect(name, value);
  }

  private called(rule: true | Segment[][] | undefined, value: unknown): unknown {
    if (!this.active) return value;
    if (rule === true) {
      this.learn(value);
      return REDACTED;
    }
    return this.value(rule ? this.atPaths({ $: value }, rule.map((p) => [{ key: '$' } as Segment, ...p])).$ : value);
  }

  /**
   * Any value: every string in it (object keys, Map keys and values, Set members
   * included) with each pattern's matches and each remembered value replaced by the
   * marker. Dates, numbers, bytes and the rest are kept.
   */
  value(value: unknown): unknown {
    if (!this.active) return value;
    return this.walk(value, 0);
  }

  /** A text (an error message, an attribute): patterns and remembered values hidden. */
  text(text: string): string {
    if (!this.active) return text;
    let out = text;
    for (const re of this.patterns) {
      re.lastIndex = 0;
      out = out.replace(re, REDACTED);
    }
    this.learnedSorted ??= [...this.learned].sort((a, b) => b.length - a.length);
    for (const secret of this.learnedSorted) if (out.includes(secret)) out = out.split(secret).join(REDACTED);
    return out;
  }

  /** Remembers the strings (and long numbers) inside `value` as text to hide elsewhere. */
  learn(value: unknown): void {
    const visit = (v: unknown, depth: number): void => {
      if (depth > 300) return;
      if (typeof v === 'string') {
        if (v.length >= LEARNED_MIN_LENGTH && v !== REDACTED) {
          this.learned.add(v);
          this.learnedSorted = undefined;
        }
      } else if ((typeof v === 'number' || typeof v === 'bigint') && String(v).length >= LEARNED_MIN_LENGTH) {
        this.learned.add(String(v));
        this.learnedSorted = undefined;
      } else if (Array.isArray(v) || v instanceof Set) for (const x of v) visit(x, depth + 1);
      else if (v instanceof Map) for (const [k, x] of v) (visit(k, depth + 1), visit(x, depth + 1));
      else if (isPlainObject(v)) for (const [k, x] of Object.entries(v)) (visit(k, depth + 1), visit(x, depth + 1));
    };
    visit(value, 0);
  }

  private walk(value: unknown, depth: number): unknown {
    if (typeof value === 'string') return this.text(value);
    if (typeof value !== 'object' || value === null || depth > 300) return value;
    if (Array.isArray(value)) {
      const copy = new Array(value.length);
      for (let i = 0; i < value.length; i++) if (i in value) copy[i] = this.walk(value[i], depth + 1);
      return copy;
    }
    if (value instanceof Map) return new Map([...value].map(([k, v]) => [this.walk(k, depth + 1), this.walk(v, depth + 1)]));
    if (value instanceof Set) return new Set([...value].map((v) => this.walk(v, depth + 1)));
    if (!isPlainObject(value)) return value;
    const copy = Object.create(Object.getPrototypeOf(value) as object | null) as Record<string, unknown>;
    for (const [k, v] of Object.entries(value)) {
      let key = this.text(k);
      // Two keys hidden alike stay two keys.
      for (let n = 2; key !== k && Object.hasOwn(copy, key); n++) key = `${this.text(k)} #${n}`;
      copy[key] = this.walk(v, depth + 1);
    }
    return copy;
  }

  /** `root` with the value at each of `paths` replaced by the marker (and remembered); copies only what it changes. */
  private atPaths<T>(root: T, paths: Segment[][]): T {
    let out = root;
    for (const path of paths) out = this.atPath(out, path, 0) as T;
    return out;
  }

  private atPath(node: unknown, path: Segment[], i: number): unknown {
    if (i === path.length) {
      if (node === undefined) return node;
      this.learn(node);
      return REDACTED;
    }
    const seg = path[i]!;
    if (Array.isArray(node)) {
      const indexes = 'any' in seg ? [...node.keys()] : 'index' in seg ? [seg.index] : /^\d+$/.test(seg.key) ? [Number(seg.key)] : [];
      let copy: unknown[] | undefined;
      for (const at of indexes) {
        if (!(at in node)) continue;
        const next = this.atPath(node[at], path, i + 1);
        if (next !== node[at]) (copy ??= shallowCopy(node))[at] = next;
      }
      return copy ?? node;
    }
    if (isPlainObject(node)) {
      const keys = 'any' in seg ? Object.keys(node) : 'key' in seg ? [seg.key] : [String(seg.index)];
      let copy: Record<string, unknown> | undefined;
      for (const key of keys) {
        if (!Object.hasOwn(node, key)) continue;
        const next = this.atPath(node[key], path, i + 1);
        if (next !== node[key]) (copy ??= shallowCopy(node))[key] = next;
      }
      return copy ?? node;
    }
    return node;
  }
}

/**
 * True when a string inside `value` (keys included) holds the marker: what a form
 * built from a redacted view sends back. Written as it is, it would replace the stored
 * value with the marker, so the inspector refuses it.
 */
export function holdsMarker(value: unknown, depth = 0): boolean {
  if (typeof value === 'string') return value.includes(REDACTED);
  if (typeof value !== 'object' || value === null || depth > 300) return false;
  if (Array.isArray(value)) return value.some((v) => holdsMarker(v, depth + 1));
  return Object.entries(value).some(([k, v]) => k.includes(REDACTED) || holdsMarker(v, depth + 1));
}

/**
 * One value through `rules`, in the place it is shown: as a state (`{ as: 'state' }`,
 * fields by name), a recorded output or an effect outcome (`{ as: 'record' | 'effect',
 * name }`), or anything else (patterns only). A face that shows several values of
 * one thread keeps a {@link Redactor} instead, so what one hid is hidden in the others.
 *
 * @example
 * ```ts
 * redactValue({ apiKey: 'k-123456' }, rules, { as: 'state' }); // { apiKey: '[redacted]' }
 * ```
 */
export function redactValue(value: unknown, rules: RedactionRules, context: { as: 'state' } | { as: 'record' | 'effect'; name: string } | { as?: 'any' } = {}): unknown {
  const r = new Redactor(rules);
  if (context.as === 'state') return r.state(value as Record<string, unknown>);
  if (context.as === 'record') return r.record(context.name, value);
  if (context.as === 'effect') return r.effect(context.name, value);
  return r.value(value);
}
