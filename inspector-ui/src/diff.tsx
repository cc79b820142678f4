/** How the state at one position differs from another's: `+` appended or added, `~` changed, `-` removed. */
import type { ComponentChildren } from 'preact';
import { api, type FieldDiff } from './api';
import { JsonValue } from './json-tree';
import { href } from './route';
import { useApi } from './use-api';

function Row({ sign, kind, field, children }: { sign: string; kind: string; field: string; children: ComponentChildren }) {
  return (
    <tr data-testid="diff-row" data-kind={kind} class={`diff-${kind}`}>
      <td class="sign">{sign}</td>
      <td class="key">{field}</td>
      <td>{children}</td>
    </tr>
  );
}

/** The rows of one field's difference, as the diff table shows them (the evaluation page shows its state diffs with them too). */
export function rows(f: FieldDiff) {
  switch (f.kind) {
    case 'appended':
      return f.items.map((item, i) => (
        <Row key={`${f.field}${i}`} sign="+" kind="appended" field={`${f.field}[${f.from + i}]`}>
          <JsonValue value={item} depth={2} />
        </Row>
      ));
    case 'added':
      return [
        <Row key={f.field} sign="+" kind="added" field={f.field}>
          <JsonValue value={f.after} depth={2} />
        </Row>,
      ];
    case 'changed':
      return [
        <Row key={f.field} sign="~" kind="changed" field={f.field}>
          <JsonValue value={f.before} depth={2} /> → <JsonValue value={f.after} depth={2} />
        </Row>,
      ];
    case 'removed':
      return f.items
        ? f.items.map((item, i) => (
            <Row key={`${f.field}${i}`} sign="-" kind="removed" field={`${f.field}[${(f.from ?? 0) + i}]`}>
              <JsonValue value={item} depth={2} />
            </Row>
          ))
        : [
            <Row key={f.field} sign="-" kind="removed" field={f.field}>
              <JsonValue value={f.before} depth={2} />
            </Row>,
          ];
  }
}

export function DiffView({ id, ns, from, to }: { id: string; ns: string; from: number; to: number }) {
  const diff = useApi(() => api<{ fields: FieldDiff[] }>(`threads/${encodeURIComponent(id)}/diff`, { from, to, ns }), [id, ns, from, to]);
  return (
    <section>
      <p>
        <a href={href({ view: 'thread', id, ns })}>← thread {id}</a>
      </p>
      <h1>
        {id} · seq {from} → {to}
      </h1>
      {diff.error && <p class="error" data-testid="error">{diff.error.message}</p>}
      {diff.data &&
        (diff.data.fields.length === 0 ? (
          <p data-testid="diff-empty">the two states are equal</p>
        ) : (
          <table class="diff" data-testid="diff">
            <tbody>{diff.data.fields.flatMap(rows)}</tbody>
          </table>
        ))}
    </section>
  );
}
