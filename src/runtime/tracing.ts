/**
 * @module runtime/tracing
 * OpenTelemetry spans of a run, when the application registered a tracer provider:
 * `cairn.run` › `cairn.superstep` › `cairn.task` › `cairn.record` / `cairn.effect`, and
 * `cairn.commit` beside the tasks of a superstep (see README, "OpenTelemetry").
 *
 * Why it is built this way:
 * - `@opentelemetry/api` is an optional peer dependency: it is imported lazily, with a
 *   dynamic `import()` the first time a run starts (or as a `Worker` starts,
 *   ahead of its first run), and the result (the module, or "not installed") is kept
 *   for the process. `import 'cairn'` never loads it, and an application without it
 *   pays one failed import, once.
 * - Whether anything records is asked once per run, not per step: the run's root span
 *   is started, and when it does not record (no provider registered, so the API's
 *   no-op provider made it; or a sampler dropped it) it is ended and the run carries
 *   no {@link TraceSpan} at all. Every other place reaches tracing as `trace?.…`, so a
 *   run without one builds no span, no attribute object, no closure.
 * - Spans are parented explicitly (each span is created from its parent
 *   {@link TraceSpan}), not through the active context: the tree is right whether or
 *   not the application registered a context manager, and for the concurrent tasks of
 *   one superstep. The node's own function, a recorded call's `fn` and an effect's
 *   `run` execute inside their span's context (`context.with`), so the application's
 *   own instrumentation (HTTP clients, model SDKs) nests under them when a context
 *   manager is registered.
 * - The types here are structural (the few members cairn uses), so cairn's
 *   declarations never name `@opentelemetry/api`'s types.
 */

import type { RecordMeta } from '../contracts/ledger.js';

/** Attribute values cairn sets on its spans. */
export type TraceAttributes = Record<string, string | number | boolean | string[] | undefined>;

/** The members of an OpenTelemetry span cairn uses. */
interface OtelSpan {
  setAttributes(attributes: TraceAttributes): unknown;
  addEvent(name: string, attributes?: TraceAttributes): unknown;
  setStatus(status: { code: number; message?: string }): unknown;
  recordException(exception: Error | string | { name: string; message: string; stack?: string }): unknown;
  isRecording(): boolean;
  end(): void;
}

/** An OpenTelemetry context, opaque to cairn. */
type OtelContext = object;

interface OtelTracer {
  startSpan(name: string, options: { attributes?: TraceAttributes }, context: OtelContext): OtelSpan;
}

/** The members of `@opentelemetry/api` cairn uses. */
interface OtelApi {
  trace: {
    getTracer(name: string, version?: string): OtelTracer;
    setSpan(context: OtelContext, span: OtelSpan): OtelContext;
  };
  context: {
    active(): OtelContext;
    with<R>(context: OtelContext, fn: () => R): R;
  };
  SpanStatusCode: { ERROR: number };
}

/** The tracer's instrumentation scope name. */
export const TRACER_NAME = 'cairn';

/** undefined: not tried yet; null: not installed (tracing stays off for the process). */
let loaded: OtelApi | null | undefined;
let loading: Promise<OtelApi | null> | undefined;

/** `@opentelemetry/api`, imported once; null when it cannot be loaded. */
async function otelApi(): Promise<OtelApi | null> {
  if (loaded !== undefined) return loaded;
  loading ??= import('@opentelemetry/api').then(
    (api) => (loaded = api as unknown as OtelApi),
    () => (loaded = null),
  );
  return loading;
}

/**
 * Starts importing `@opentelemetry/api` now, ahead of the first run that asks for it
 * (a worker does this as it starts, while it connects and claims, so that its first
 * run does not wait for the import). Never fails: not installed is remembered as
 * the first run would remember it.
 */
export function preloadTracing(): void {
  if (loaded === undefined) void otelApi();
}

/**
 * One span of a run, with what its children need: the API, the tracer and the
 * context the span is active in. Only ever created for a recording span.
 */
export class TraceSpan {
  private constructor(
    private readonly api: OtelApi,
    private readonly tracer: OtelTracer,
    private readonly span: OtelSpan,
    private readonly context: OtelContext,
    /** The app's redaction of text: every string attribute, event attribute and error message goes through it. */
    private readonly redact: ((text: string) => string) | undefined,
  ) {}

  /** `attributes` with every string value redacted. */
  private shown(attributes: TraceAttributes): TraceAttributes {
    const redact = this.redact;
    if (!redact) return attributes;
    const out: TraceAttributes = {};
    for (const [key, value] of Object.entries(attributes)) out[key] = typeof value === 'string' ? redact(value) : Array.isArray(value) ? (value.map((v) => (typeof v === 'string' ? redact(v) : v)) as typeof value) : value;
    return out;
  }

  /**
   * The `cairn.run` span of a run, as a child of the caller's active span; undefined
   * when `@opentelemetry/api` is not installed or the span would not record.
   */
  static async startRun(attributes: TraceAttributes, redact?: (text: string) => string): Promise<TraceSpan | undefined> {
    const api = loaded === undefined ? await otelApi() : loaded;
    if (!api) return undefined;
    const tracer = api.trace.getTracer(TRACER_NAME);
    const parent = api.context.active();
    const span = tracer.startSpan('cairn.run', { attributes: redact ? Object.fromEntries(Object.entries(attributes).map(([k, v]) => [k, typeof v === 'string' ? redact(v) : v])) : attributes }, parent);
    if (!span.isRecording()) {
      span.end();
      return undefined;
    }
    return new TraceSpan(api, tracer, span, api.trace.setSpan(parent, span), redact);
  }

  /** A span under this one (redacted as this one is). */
  child(name: string, attributes: TraceAttributes): TraceSpan {
    const span = this.tracer.startSpan(name, { attributes: this.shown(attributes) }, this.context);
    return new TraceSpan(this.api, this.tracer, span, this.api.trace.setSpan(this.context, span), this.redact);
  }

  /** Runs `fn` with this span active: what the application instruments inside nests under it. */
  within<R>(fn: () => R): R {
    return this.api.context.with(this.context, fn);
  }

  set(attributes: TraceAttributes): void {
    this.span.setAttributes(this.shown(attributes));
  }

  event(name: string, attributes: TraceAttributes): void {
    this.span.addEvent(name, this.shown(attributes));
  }

  /** Marks the span failed: error status with the error's message, its stable `code` as `cairn.error.code`, the exception event. */
  fail(error: unknown): void {
    const raw = error instanceof Error ? error.message : String(error);
    const message = this.redact ? this.redact(raw) : raw;
    const code = error instanceof Error ? ((error as { code?: unknown }).code ?? error.name) : 'ERR_THROWN';
    this.span.setAttributes({ 'cairn.error.code': String(code) });
    // Redacted, the exception is recorded as its name, message and stack, each through the rules.
    this.span.recordException(
      error instanceof Error
        ? this.redact
          ? { name: error.name, message, ...(error.stack ? { stack: this.redact(error.stack) } : {}) }
          : error
        : message,
    );
    this.span.setStatus({ code: this.api.SpanStatusCode.ERROR, message });
  }

  end(): void {
    this.span.end();
  }

  /**
   * Runs `body` in a child span named `name`, ended when it settles, failed when it
   * throws. `body` gets the span, to add what it learns on the way.
   */
  async around<R>(name: string, attributes: TraceAttributes, body: (span: TraceSpan) => Promise<R>): Promise<R> {
    return this.child(name, attributes).closing(body);
  }

  /** Runs `body` in this span and ends it when `body` settles (failed when it throws). */
  async closing<R>(body: (span: TraceSpan) => Promise<R>): Promise<R> {
    try {
      return await body(this);
    } catch (error) {
      this.fail(error);
      throw error;
    } finally {
      this.end();
    }
  }

  /** {@link TraceSpan.closing} for a run: the status it ended in is the span's `cairn.thread.status`. */
  run<R extends { status: string }>(body: () => Promise<R>): Promise<R> {
    return this.closing(async () => {
      const result = await body();
      this.set({ 'cairn.thread.status': result.status });
      return result;
    });
  }
}

/**
 * The attributes a record's {@link RecordMeta} gives its span: `cairn.record.kind`, and
 * for a model call the OpenTelemetry GenAI semantic conventions (`gen_ai.operation.name`
 * `chat`, `gen_ai.request.model`, `gen_ai.provider.name` with the older `gen_ai.system`,
 * `gen_ai.usage.input_tokens` / `output_tokens`); for a tool result `execute_tool` and
 * `gen_ai.tool.name` (the meta's `tool`, else the record's name). Nothing for a record
 * without meta (written before kinds existed).
 */
export function recordMetaAttributes(meta: RecordMeta | undefined, name: string): TraceAttributes {
  if (!meta) return {};
  const attributes: TraceAttributes = { 'cairn.record.kind': meta.kind };
  if (meta.latencyMs !== undefined) attributes['cairn.record.latency_ms'] = meta.latencyMs;
  if (meta.kind === 'model') {
    attributes['gen_ai.operation.name'] = 'chat';
    if (meta.model !== undefined) attributes['gen_ai.request.model'] = meta.model;
    if (meta.provider !== undefined) {
      attributes['gen_ai.provider.name'] = meta.provider;
      attributes['gen_ai.system'] = meta.provider;
    }
    if (meta.usage?.inputTokens !== undefined) attributes['gen_ai.usage.input_tokens'] = meta.usage.inputTokens;
    if (meta.usage?.outputTokens !== undefined) attributes['gen_ai.usage.output_tokens'] = meta.usage.outputTokens;
  } else if (meta.kind === 'tool') {
    attributes['gen_ai.operation.name'] = 'execute_tool';
    attributes['gen_ai.tool.name'] = meta.tool ?? name;
  }
  return attributes;
}

/**
 * Extra attributes of a recorded call's span, computed from the value it returned:
 * `ctx.recordArtifact` adds `cairn.artifact.id` (a record's kind and model are
 * {@link recordMetaAttributes}).
 */
export type RecordAttributes<T> = (value: T) => TraceAttributes;
