/**
 * What a person may do from the page when the inspector was started with
 * `--allow-actions`: answer an interrupt (a form from its answer's schema), send a
 * signal, settle an effect in doubt, cancel or delete a thread, replay or fork from
 * a position with an edited state. Each is a POST to the inspector's action routes
 * with the access token in the `x-cairn-token` header (the server refuses an action
 * without it, as a possible cross-site request). Read-only inspectors show none of
 * it; actions that run the graph's code are shown disabled, with the reason, when
 * the inspector has no `--app`. A refused action shows the server's typed error
 * (`ERR_STATE_VALIDATION: …`) and changes nothing.
 */
import type { ComponentChildren } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import { ApiError, api, type Interrupt, type LedgerEntry, type ThreadRecord } from './api';
import { href } from './route';
import { SchemaForm, describesForm, initialValue, type JsonSchema } from './schema-form';
import './actions.css';

/** What `GET /api/actions` says the page may offer. */
export interface ActionsInfo {
  allowed: boolean;
  app: boolean;
  actor: string | null;
  modelFields: string[] | null;
  appendFields: string[] | null;
}

const TOKEN_KEY = 'cairn-inspector-token';

/** The access token: from the page's URL (`?token=…`), kept for the tab so a URL without it still acts. */
function accessToken(): string {
  const fromUrl = new URLSearchParams(location.search).get('token');
  if (fromUrl) sessionStorage.setItem(TOKEN_KEY, fromUrl);
  return fromUrl ?? sessionStorage.getItem(TOKEN_KEY) ?? '';
}

/** POST an action (`threads/<id>/<action>`) with a JSON body; the parsed answer, or an ApiError with the server's code. */
export async function act<T>(thread: string, action: string, body: Record<string, unknown>): Promise<T> {
  return post<T>(`threads/${encodeURIComponent(thread)}/${action}`, body);
}

/** POST `/api/<path>` with a JSON body and the token header; the parsed answer, or an ApiError with the server's code. */
export async function post<T>(path: string, body: Record<string, unknown>): Promise<T> {
  const response = await fetch(`./api/${path}`, {
    method: 'POST',
    credentials: 'same-origin',
    headers: { 'content-type': 'application/json', 'x-cairn-token': accessToken() },
    body: JSON.stringify(body),
  });
  const answer = (await response.json()) as T & { error?: { code: string; message: string } };
  if (!response.ok) throw new ApiError(response.status, answer.error?.code ?? 'ERR_HTTP', answer.error?.message ?? response.statusText);
  return answer;
}

let loaded: Promise<ActionsInfo> | undefined;

/** What the inspector allows, asked once per page load; null until known. */
export function useActions(): ActionsInfo | null {
  const [info, setInfo] = useState<ActionsInfo | null>(null);
  useEffect(() => {
    loaded ??= api<ActionsInfo>('actions').catch(() => ({ allowed: false, app: false, actor: null, modelFields: null, appendFields: null }));
    let live = true;
    void loaded.then((i) => live && setInfo(i));
    return () => {
      live = false;
    };
  }, []);
  return info;
}

const NO_APP = 'runs the graph’s code: start the inspector with --app <module#export>';

/** One action's run: busy while it is under way, its error or its result afterwards. */
function useAction<T>() {
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<ApiError | Error | null>(null);
  const [result, setResult] = useState<T | null>(null);
  const run = async (perform: () => Promise<T>, onDone?: (result: T) => void) => {
    setBusy(true);
    setError(null);
    try {
      const r = await perform();
      setResult(r);
      onDone?.(r);
    } catch (e) {
      setError(e as Error);
    } finally {
      setBusy(false);
    }
  };
  return { busy, error, result, run, fail: setError };
}

function ActionError({ error }: { error: Error | null }) {
  if (!error) return null;
  return (
    <p class="error" data-testid="action-error">
      {error instanceof ApiError ? `${error.code}: ` : ''}
      {error.message}
    </p>
  );
}

function Disabled({ reason, children }: { reason: string; children: ComponentChildren }) {
  return (
    <span class="disabled-action" title={reason} data-testid="disabled-action">
      {children} <span class="hint">({reason})</span>
    </span>
  );
}

/** A JSON text box's value: parsed, or an Error saying why not. */
function parseJson(text: string, what: string): unknown {
  try {
    return text.trim() === '' ? null : JSON.parse(text);
  } catch (error) {
    throw new Error(`${what} is not JSON: ${(error as Error).message}`);
  }
}

/** The answer form of one pending interrupt: built from its answer schema, or a JSON box. */
export function InterruptAnswer({ thread, interrupt, info, onDone }: { thread: string; interrupt: Interrupt & { answerSchema?: JsonSchema; key?: string }; info: ActionsInfo | null; onDone(): void }) {
  const schema = interrupt.answerSchema;
  // Declared pauses and ctx.interruptAfter take state input; ctx.interrupt calls (they have a key, or an answer schema) an answer.
  const takesAnswer = interrupt.key !== undefined || schema !== undefined;
  const [value, setValue] = useState<unknown>(() => (takesAnswer && schema ? initialValue(schema) : takesAnswer ? undefined : {}));
  const [asJson, setAsJson] = useState(!describesForm(schema));
  const action = useAction<{ status: string }>();
  if (!info?.allowed) return null;
  if (!info.app) return <Disabled reason={NO_APP}>answer</Disabled>;
  const submit = (e: Event) => {
    e.preventDefault();
    void action.run(() => act(thread, 'resume', { interrupt: interrupt.id, ...(takesAnswer ? { answer: value ?? null } : { input: value ?? {} }) }), onDone);
  };
  return (
    <form class="action-form" data-testid="answer-form" onSubmit={submit}>
      <h3>{takesAnswer ? 'Answer' : 'Input (state writes)'}</h3>
      {takesAnswer && !schema && <p class="hint">This interrupt's answer schema cannot describe itself: write the answer as JSON.</p>}
      <SchemaForm schema={takesAnswer ? schema : undefined} value={value} onChange={setValue} asJson={asJson} />
      <p>
        {describesForm(schema) && takesAnswer && (
          <button type="button" class="link" data-testid="answer-as-json" onClick={() => setAsJson(!asJson)}>
            {asJson ? 'edit as a form' : 'edit as JSON'}
          </button>
        )}{' '}
        <button type="submit" data-testid="answer-submit" disabled={action.busy}>
          {action.busy ? 'resuming…' : `resume as ${info.actor}`}
        </button>
      </p>
      <ActionError error={action.error} />
      {action.result && <p data-testid="action-done">resumed: the thread is {action.result.status}</p>}
    </form>
  );
}

const CANCELLABLE = ['running', 'waiting', 'interrupted', 'needs_attention'];

/** The thread's own actions: send a signal (a waiting thread), cancel it, delete it. */
export function ThreadActions({ thread, info, onDone }: { thread: ThreadRecord; info: ActionsInfo | null; onDone(): void }) {
  const [name, setName] = useState('');
  const [payload, setPayload] = useState('');
  const [reason, setReason] = useState('');
  const [confirm, setConfirm] = useState('');
  const signal = useAction<{ signal: { id: number; name: string } }>();
  const cancel = useAction<{ cancelled: boolean; status: string }>();
  const remove = useAction<{ deleted: boolean }>();
  if (!info?.allowed) return null;
  return (
    <section class="actions" data-testid="thread-actions">
      <h2>Actions (as {info.actor})</h2>
      <p>
        {info.app ? (
          <a href={href({ view: 'evaluate', query: `threads=${encodeURIComponent(thread.id)}` })} data-testid="evaluate-thread">
            Evaluate this thread
          </a>
        ) : (
          <Disabled reason={NO_APP}>evaluate this thread</Disabled>
        )}
      </p>
      {thread.status === 'waiting' && (
        <form
          class="action-form"
          data-testid="signal-form"
          onSubmit={(e) => {
            e.preventDefault();
            void signal.run(async () => act(thread.id, 'signal', { name, payload: parseJson(payload, 'the payload') }), onDone);
          }}
        >
          <h3>Send a signal</h3>
          <label>
            name <input type="text" name="signal-name" value={name} onInput={(e) => setName((e.target as HTMLInputElement).value)} />
          </label>{' '}
          <label>
            payload (JSON) <textarea name="signal-payload" rows={2} value={payload} onInput={(e) => setPayload((e.target as HTMLTextAreaElement).value)} />
          </label>{' '}
          <button type="submit" data-testid="signal-submit" disabled={signal.busy}>
            send
          </button>
          <ActionError error={signal.error} />
          {signal.result && <p data-testid="action-done">signal {signal.result.signal.id} ({signal.result.signal.name}) queued</p>}
        </form>
      )}
      {CANCELLABLE.includes(thread.status) && (
        <form
          class="action-form"
          data-testid="cancel-form"
          onSubmit={(e) => {
            e.preventDefault();
            if (!window.confirm(`Cancel thread ${thread.id}? The run holding it stops at its next step; the thread becomes failed.`)) return;
            void cancel.run(() => act(thread.id, 'cancel', reason ? { reason } : {}), onDone);
          }}
        >
          <h3>Cancel</h3>
          <label>
            reason <input type="text" name="cancel-reason" value={reason} onInput={(e) => setReason((e.target as HTMLInputElement).value)} />
          </label>{' '}
          <button type="submit" class="danger" data-testid="cancel-submit" disabled={cancel.busy}>
            cancel thread
          </button>
          <ActionError error={cancel.error} />
        </form>
      )}
      <form
        class="action-form"
        data-testid="delete-form"
        onSubmit={(e) => {
          e.preventDefault();
          void remove.run(
            () => act(thread.id, 'delete', { confirm }),
            () => {
              location.hash = href({ view: 'threads' });
            },
          );
        }}
      >
        <h3>Delete</h3>
        <label>
          type <code>{thread.id}</code> to confirm <input type="text" name="delete-confirm" value={confirm} onInput={(e) => setConfirm((e.target as HTMLInputElement).value)} />
        </label>{' '}
        <button type="submit" class="danger" data-testid="delete-submit" disabled={remove.busy || confirm !== thread.id}>
          delete thread and all it owns
        </button>
        <ActionError error={remove.error} />
      </form>
    </section>
  );
}

/** Threads whose effects without outcome are in doubt: no run is under way that may still record them. */
const SETTLEABLE = ['needs_attention', 'failed'];

/** Settling one effect in doubt (an intent without outcome, of a needs_attention or failed thread): its outcome as JSON, or that it failed. */
export function EffectActions({ thread, status, entry, info, onDone }: { thread: string; status: string; entry: LedgerEntry; info: ActionsInfo | null; onDone(): void }) {
  const [outcome, setOutcome] = useState('');
  const [message, setMessage] = useState('');
  const action = useAction<{ resolution: string }>();
  if (!info?.allowed || entry.kind !== 'effect' || entry.status !== 'intent' || !SETTLEABLE.includes(status)) return null;
  return (
    <div class="effect-actions" data-testid="effect-actions">
      <textarea name="effect-outcome" rows={1} placeholder="outcome (JSON)" value={outcome} onInput={(e) => setOutcome((e.target as HTMLTextAreaElement).value)} />{' '}
      <button type="button" data-testid="effect-resolve" disabled={action.busy} onClick={() => void action.run(async () => act(thread, 'resolve-effect', { key: entry.key, outcome: parseJson(outcome, 'the outcome') }), onDone)}>
        record outcome
      </button>{' '}
      <input type="text" name="effect-message" placeholder="why it failed" value={message} onInput={(e) => setMessage((e.target as HTMLInputElement).value)} />{' '}
      <button type="button" class="danger" data-testid="effect-fail" disabled={action.busy} onClick={() => void action.run(() => act(thread, 'resolve-effect', { key: entry.key, failed: true, ...(message ? { message } : {}) }), onDone)}>
        mark failed
      </button>
      <ActionError error={action.error} />
      {action.result && <span data-testid="action-done">{action.result.resolution === 'failed' ? 'recorded as failed' : 'outcome recorded'}</span>}
    </div>
  );
}

interface ReplayAnswer {
  from: number;
  to: number;
  sameStates: boolean;
  steps: { seq: number; same: boolean; nodes: string[]; differences: string[] }[];
}

/**
 * The patch a fork writes, from the edited state: only the fields the person changed
 * (the patch goes through the reducers as a write), and for an append field only the
 * items added after the ones it had (its reducer appends what it is given). Throws
 * when an append field's items were changed or removed: a fork cannot do that.
 */
export function forkPatch(edited: Record<string, unknown>, original: Record<string, unknown>, appendFields: string[]): Record<string, unknown> {
  const patch: Record<string, unknown> = {};
  for (const [field, value] of Object.entries(edited)) {
    const before = original[field];
    if (JSON.stringify(value) === JSON.stringify(before)) continue;
    if (appendFields.includes(field) && Array.isArray(before)) {
      const kept = Array.isArray(value) && value.length >= before.length && before.every((item, i) => JSON.stringify(item) === JSON.stringify(value[i]));
      if (!kept) throw new Error(`${field} is an append field: a fork can add items after its ${before.length}, not change or remove them.`);
      patch[field] = (value as unknown[]).slice(before.length);
    } else patch[field] = value;
  }
  return patch;
}

/** A position's actions: replay from it (writes nothing), or fork from it with an edited state. */
export function PositionActions({ thread, seq, state, info }: { thread: string; seq: number; state: Record<string, unknown>; info: ActionsInfo | null }) {
  const writable = (fields: string[]) => Object.fromEntries(fields.filter((f) => f in state).map((f) => [f, state[f]]));
  const [text, setText] = useState(() => JSON.stringify(writable(info?.modelFields ?? []), null, 2));
  const [runOn, setRunOn] = useState(true);
  const replay = useAction<ReplayAnswer>();
  const fork = useAction<{ status: string; seq: number }>();
  useEffect(() => setText(JSON.stringify(writable(info?.modelFields ?? []), null, 2)), [info, seq, thread]);
  if (!info?.allowed) return null;
  if (!info.app) {
    return (
      <section class="actions" data-testid="position-actions">
        <h2>Actions</h2>
        <Disabled reason={NO_APP}>replay from here · fork from here</Disabled>
      </section>
    );
  }
  const submitFork = (e: Event) => {
    e.preventDefault();
    void fork.run(
      async () => {
        const edited = parseJson(text, 'the state');
        if (typeof edited !== 'object' || edited === null || Array.isArray(edited)) throw new Error('the state must be a JSON object of fields.');
        return act(thread, 'fork', { seq, patch: forkPatch(edited as Record<string, unknown>, writable(info.modelFields ?? []), info.appendFields ?? []), run: runOn });
      },
      () => {
        location.hash = href({ view: 'thread', id: thread, ns: '' });
      },
    );
  };
  return (
    <section class="actions" data-testid="position-actions">
      <h2>Actions (as {info.actor})</h2>
      <div class="action-form">
        <h3>Replay from seq {seq}</h3>
        <p class="hint">Re-executes the steps from here with the graph's code, serving every recorded output; writes nothing.</p>
        <button type="button" data-testid="replay-submit" disabled={replay.busy} onClick={() => void replay.run(() => act(thread, 'replay', { from: seq }))}>
          replay
        </button>
        <ActionError error={replay.error} />
        {replay.result && (
          <p data-testid="replay-result">
            replayed seq {replay.result.from} → {replay.result.to}: {replay.result.steps.length} steps,{' '}
            {replay.result.sameStates ? 'every state matched' : `diverged at seq ${replay.result.steps.find((s) => !s.same)?.seq}`}
          </p>
        )}
      </div>
      <form class="action-form" data-testid="fork-form" onSubmit={submitFork}>
        <h3>Fork from seq {seq}</h3>
        <p class="hint">
          The model fields stored at this position; change what the new branch should start from, or add a field (
          {(info.modelFields ?? []).filter((f) => !(f in state)).join(', ') || 'none left'}). Changed fields are written as a patch by {info.actor}
          {info.appendFields?.length ? `; items added to ${info.appendFields.join(', ')} are appended` : ''}.
        </p>
        <textarea name="fork-state" rows={10} value={text} onInput={(e) => setText((e.target as HTMLTextAreaElement).value)} />
        <p>
          <label>
            <input type="checkbox" name="fork-run" checked={runOn} onChange={(e) => setRunOn((e.target as HTMLInputElement).checked)} /> run the new branch on
          </label>{' '}
          <button type="submit" data-testid="fork-submit" disabled={fork.busy}>
            {fork.busy ? 'forking…' : 'fork'}
          </button>
        </p>
        <ActionError error={fork.error} />
      </form>
    </section>
  );
}
