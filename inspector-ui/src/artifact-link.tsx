/**
 * Artifact refs shown as links: inside an {@link ArtifactScope} (a position's state,
 * its recorded outputs), a value shaped like an artifact ref is drawn as its id,
 * media type and size, with a preview that opens in place. The preview reads the
 * bytes from the artifact route, which verifies them against the ref's sha256
 * first: its badge says ok, corrupt or missing. Text and JSON are shown as text,
 * raster images as an image (from a data: URL, which the page's CSP allows); anything
 * else only as a download.
 */
import { createContext } from 'preact';
import { useContext, useState } from 'preact/hooks';
import { JsonValue } from './json-tree';
import type { ArtifactRefView } from './views-api';
import './views.css';

/** Where refs come from: the thread and the position whose state holds them. */
export interface ArtifactPlace {
  id: string;
  ns: string;
  seq: number;
}

/** Set around a value whose artifact refs should be links. */
export const ArtifactScope = createContext<ArtifactPlace | null>(null);

/** The artifact route's URL of `ref` at `place`. */
export function artifactUrl(place: ArtifactPlace, ref: ArtifactRefView, download = false): string {
  const q = new URLSearchParams({ id: ref.id, seq: String(place.seq) });
  if (place.ns) q.set('ns', place.ns);
  if (download) q.set('download', '1');
  return `./api/threads/${encodeURIComponent(place.id)}/artifact?${q}`;
}

const TEXT_LIMIT = 64 * 1024;
const INLINE_IMAGES = ['image/png', 'image/jpeg', 'image/gif', 'image/webp', 'image/avif'];

type Preview =
  | { status: 'loading' }
  | { status: 'ok'; kind: 'text' | 'json' | 'image' | 'binary'; text?: string; json?: unknown; dataUrl?: string; cut?: boolean }
  | { status: 'corrupt' | 'missing' | 'unavailable'; message: string };

function mediaKind(mediaType: string): 'text' | 'json' | 'image' | 'binary' {
  const type = mediaType.split(';')[0]!.trim().toLowerCase();
  if (type === 'text/plain') return 'text';
  if (type === 'application/json' || type.endsWith('+json')) return 'json';
  if (INLINE_IMAGES.includes(type)) return 'image';
  return 'binary';
}

function readDataUrl(blob: Blob): Promise<string> {
  return new Promise((resolve, reject) => {
    const reader = new FileReader();
    reader.onload = () => resolve(String(reader.result));
    reader.onerror = () => reject(reader.error);
    reader.readAsDataURL(blob);
  });
}

async function loadPreview(url: string, ref: ArtifactRefView): Promise<Preview> {
  const response = await fetch(url, { credentials: 'same-origin' });
  if (!response.ok) {
    const body = (await response.json().catch(() => ({}))) as { error?: { code?: string; message?: string } };
    const code = body.error?.code ?? '';
    const message = body.error?.message ?? response.statusText;
    if (code === 'ERR_ARTIFACT_INTEGRITY') return { status: 'corrupt', message };
    if (code === 'ERR_ARTIFACT_NOT_FOUND') return { status: 'missing', message };
    return { status: 'unavailable', message };
  }
  const kind = mediaKind(ref.media_type);
  const blob = await response.blob();
  if (kind === 'image') return { status: 'ok', kind, dataUrl: await readDataUrl(blob) };
  if (kind === 'binary') return { status: 'ok', kind };
  const text = await blob.slice(0, TEXT_LIMIT).text();
  const cut = blob.size > TEXT_LIMIT;
  if (kind === 'json' && !cut) {
    try {
      return { status: 'ok', kind, json: JSON.parse(text) as unknown };
    } catch {
      return { status: 'ok', kind: 'text', text };
    }
  }
  return { status: 'ok', kind: 'text', text, cut };
}

function Badge({ preview }: { preview: Preview }) {
  const text = preview.status === 'loading' ? 'verifying…' : preview.status === 'ok' ? 'sha256 ok' : preview.status === 'unavailable' ? 'not available' : preview.status;
  const cls = preview.status === 'ok' ? 'ok' : preview.status === 'loading' ? '' : 'bad';
  return (
    <span class={`badge ${cls}`} data-testid="artifact-status" data-status={preview.status} title={'message' in preview ? preview.message : undefined}>
      {text}
    </span>
  );
}

function size(n: number): string {
  return n < 1024 ? `${n} B` : n < 1024 * 1024 ? `${(n / 1024).toFixed(1)} KiB` : `${(n / 1024 / 1024).toFixed(1)} MiB`;
}

/** A ref drawn as a link with a preview that opens in place. */
export function ArtifactLink({ value, place }: { value: ArtifactRefView; place: ArtifactPlace }) {
  const [preview, setPreview] = useState<Preview | null>(null);
  const open = () => {
    if (preview) return setPreview(null);
    setPreview({ status: 'loading' });
    loadPreview(artifactUrl(place, value), value).then(setPreview, (e: Error) => setPreview({ status: 'unavailable', message: e.message }));
  };
  return (
    <span class="artifact" data-testid="artifact-link" data-artifact={value.id}>
      <button type="button" class="link" data-testid="artifact-open" onClick={open}>
        {preview ? "▾" : "▸"} artifact {value.id}
      </button>{' '}
      <span class="hint">
        {value.media_type} · {size(value.size_bytes)} · sha256 {value.sha256.slice(0, 12)}…
      </span>{' '}
      <a href={artifactUrl(place, value, true)} data-testid="artifact-download">
        download
      </a>
      {preview && (
        <div class="artifact-preview" data-testid="artifact-preview">
          <Badge preview={preview} />
          {preview.status === 'ok' && preview.kind === 'text' && (
            <pre data-testid="artifact-text">
              {preview.text}
              {preview.cut ? '\n… (cut: download for the whole file)' : ''}
            </pre>
          )}
          {preview.status === 'ok' && preview.kind === 'json' && (
            <div data-testid="artifact-json">
              <JsonValue value={preview.json} />
            </div>
          )}
          {preview.status === 'ok' && preview.kind === 'image' && <img data-testid="artifact-image" src={preview.dataUrl} alt={value.id} />}
          {preview.status === 'ok' && preview.kind === 'binary' && <p class="hint">{value.media_type} is not shown here: download it.</p>}
          {'message' in preview && <p class="error">{preview.message}</p>}
        </div>
      )}
    </span>
  );
}

/** The ref as a link when inside an {@link ArtifactScope}, or null (the caller draws the value as usual). */
export function useArtifactPlace(): ArtifactPlace | null {
  return useContext(ArtifactScope);
}
