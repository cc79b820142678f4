/**
 * A value as a collapsible tree: objects and lists fold (the first two levels start
 * open), long strings are cut with a control that shows them whole, and the
 * server's stand-ins (`undefined`, `10n`…) are written as JavaScript writes them.
 * Inside an ArtifactScope, artifact refs are links with a preview.
 */
import { useState } from 'preact/hooks';
import { rawText } from './api';
import { ArtifactLink, useArtifactPlace } from './artifact-link';
import { isArtifactRef } from './views-api';

/** Strings longer than this are cut until expanded. */
const LONG_STRING = 160;

function LongString({ text }: { text: string }) {
  const [open, setOpen] = useState(false);
  if (text.length <= LONG_STRING) return <span class="str">{JSON.stringify(text)}</span>;
  return (
    <span class="str">
      {open ? JSON.stringify(text) : `${JSON.stringify(text.slice(0, LONG_STRING)).slice(0, -1)}…"`}{' '}
      <button type="button" class="link" data-testid="expand-string" onClick={() => setOpen(!open)}>
        {open ? 'show less' : `show all ${text.length} characters`}
      </button>
    </span>
  );
}

/** One value of the tree, at `depth`. */
export function JsonValue({ value, depth = 0 }: { value: unknown; depth?: number }) {
  const place = useArtifactPlace();
  if (place && isArtifactRef(value)) return <ArtifactLink value={value} place={place} />;
  const raw = rawText(value);
  if (raw !== null) return <span class="raw">{raw}</span>;
  if (value === null) return <span class="null">null</span>;
  if (typeof value === 'string') return <LongString text={value} />;
  if (typeof value === 'number' || typeof value === 'boolean') return <span class={typeof value}>{String(value)}</span>;
  const list = Array.isArray(value);
  const entries: [string, unknown][] = list ? (value as unknown[]).map((v, i) => [String(i), v]) : Object.entries(value as Record<string, unknown>);
  if (entries.length === 0) return <span>{list ? '[]' : '{}'}</span>;
  return (
    <details open={depth < 2} class="node">
      <summary>{list ? `[${entries.length} items]` : `{${entries.length} fields}`}</summary>
      <ul>
        {entries.map(([k, v]) => (
          <li key={k} data-testid="json-entry" data-key={k}>
            <span class="key">{list ? k : JSON.stringify(k)}</span>: <JsonValue value={v} depth={depth + 1} />
          </li>
        ))}
      </ul>
    </details>
  );
}

/** A state: each field on a line of its own, its value as a tree. */
export function JsonTree({ value, testid }: { value: Record<string, unknown>; testid?: string }) {
  return (
    <ul class="tree" data-testid={testid}>
      {Object.entries(value).map(([k, v]) => (
        <li key={k} data-testid="state-field" data-field={k}>
          <span class="key">{k}</span>: <JsonValue value={v} depth={1} />
        </li>
      ))}
    </ul>
  );
}
