/**
 * @module inspect/artifact-verify
 * `cairn verify --artifacts` as a pure function over the contracts: re-hashes
 * every stored artifact (streaming, so size does not matter), and finds the
 * **dangling refs**: positions and store values referring to an artifact that no
 * longer resolves (deleted, collected, expired by a retention rule, or stored with
 * other bytes), naming the thread and seq.
 */
import type { ArtifactRef, ArtifactStore } from '../contracts/artifact-store.js';
import type { Checkpointer } from '../contracts/checkpointer.js';
import type { Store } from '../contracts/store.js';
import { ArtifactIntegrityError, CairnError } from '../errors.js';
import { listArtifacts } from '../artifacts/helpers.js';
import { findArtifactRefs } from '../artifacts/refs.js';
import { walkThreadRefs } from './gc.js';

/** An artifact whose bytes no longer match its ref (digest or size), with the error a read would raise. */
export interface CorruptArtifact {
  ref: ArtifactRef;
  tenant: string | null;
  code: string;
  message: string;
}

/** A ref in a position or store value whose artifact is missing or corrupt. */
export interface DanglingRef {
  ref: ArtifactRef;
  /** Where the ref was found: a position of a thread (in namespace `ns`, '' for the root graph), or a store item. */
  thread?: string;
  ns?: string;
  seq?: number;
  store?: { namespace: string[]; key: string };
  /** `missing`: nothing stored under the id; `mismatch`: stored with another digest or size; `corrupt`: its bytes fail verification. */
  why: 'missing' | 'mismatch' | 'corrupt';
}

/** What {@link verifyArtifacts} found: artifacts whose bytes no longer match, and refs that do not resolve. */
export interface ArtifactVerifyReport {
  ok: boolean;
  /** Artifacts re-hashed, and their bytes. */
  checked: number;
  bytes: number;
  corrupt: CorruptArtifact[];
  /** Positions scanned for refs, and refs found in them. */
  positions: number;
  refs: number;
  dangling: DanglingRef[];
}

/** What {@link verifyArtifacts} re-hashes, and where it looks for the refs that must resolve. */
export interface ArtifactVerifyOptions {
  /** The unscoped artifact store. */
  artifacts: ArtifactStore;
  checkpointer?: Checkpointer;
  store?: Store;
  /** Only these threads' positions (default: every thread). */
  threads?: string[];
  onProgress?: (progress: { phase: 'hash' | 'refs'; done: number; total?: number }) => void;
}

/**
 * Re-hashes every artifact and checks every ref positions and store values hold.
 *
 * @example
 * ```ts
 * const report = await verifyArtifacts({ artifacts, checkpointer: engine.checkpointer, store: engine.store });
 * for (const d of report.dangling) console.log(`thread ${d.thread} seq ${d.seq}: ${d.ref.id} is ${d.why}`);
 * ```
 */
export async function verifyArtifacts(options: ArtifactVerifyOptions): Promise<ArtifactVerifyReport> {
  const { artifacts, checkpointer, store } = options;
  const report: ArtifactVerifyReport = { ok: true, checked: 0, bytes: 0, corrupt: [], positions: 0, refs: 0, dangling: [] };
  const corruptIds = new Set<string>();

  const listed = [];
  for await (const info of listArtifacts(artifacts, { allTenants: true })) listed.push(info);
  for (const info of listed) {
    try {
      // One streaming pass: memory stays flat whatever the size; the error comes at the end.
      const stream = await artifacts.stream(info.ref, { verify: 'during' });
      for await (const chunk of stream) report.bytes += chunk.byteLength;
    } catch (error) {
      if (!CairnError.is(error) || !(ArtifactIntegrityError.is(error) || error.code === 'ERR_ARTIFACT_NOT_FOUND')) throw error;
      // Deleted between the listing and the read: not a corruption.
      if (error.code === 'ERR_ARTIFACT_NOT_FOUND') continue;
      report.corrupt.push({ ref: info.ref, tenant: info.tenant, code: error.code, message: error.message });
      corruptIds.add(info.ref.id);
    }
    report.checked++;
    options.onProgress?.({ phase: 'hash', done: report.checked, total: listed.length });
  }

  /** Resolves each distinct ref once. */
  const verdicts = new Map<string, DanglingRef['why'] | null>();
  const judge = async (ref: ArtifactRef): Promise<DanglingRef['why'] | null> => {
    const key = `${ref.id}\u0000${ref.sha256}\u0000${ref.size_bytes}`;
    if (verdicts.has(key)) return verdicts.get(key)!;
    let verdict: DanglingRef['why'] | null;
    try {
      const info = await artifacts.stat(ref);
      verdict = !info ? 'missing' : info.ref.sha256 !== ref.sha256 || info.ref.size_bytes !== ref.size_bytes ? 'mismatch' : corruptIds.has(ref.id) ? 'corrupt' : null;
    } catch (error) {
      // A ref whose id does not even parse cannot resolve.
      if (CairnError.is(error) && error.code === 'ERR_INVALID_KEY') verdict = 'missing';
      else throw error;
    }
    verdicts.set(key, verdict);
    return verdict;
  };

  if (checkpointer) {
    const ids = options.threads ?? [];
    if (!options.threads) {
      for (let after: string | undefined; ; ) {
        const page = await checkpointer.listThreads({ limit: 200, ...(after !== undefined ? { after } : {}) });
        ids.push(...page.map((t) => t.id));
        if (page.length < 200) break;
        after = page[page.length - 1]!.id;
      }
    }
    for (const id of ids) {
      const thread = await checkpointer.getThread(id);
      if (!thread) continue;
      const found: { ref: ArtifactRef; ns: string; seq: number }[] = [];
      await walkThreadRefs(checkpointer, undefined, thread, (value, at, source) => {
        if (source !== 'position') return;
        report.positions++;
        const seen = new Set<string>();
        for (const ref of findArtifactRefs(value)) {
          if (seen.has(ref.id)) continue;
          seen.add(ref.id);
          found.push({ ref, ns: at.ns, seq: at.seq });
        }
      });
      for (const { ref, ns, seq } of found) {
        report.refs++;
        const why = await judge(ref);
        if (why) report.dangling.push({ ref, thread: id, ns, seq, why });
      }
      options.onProgress?.({ phase: 'refs', done: report.positions });
    }
  }

  if (store) {
    for (let cursor: string | null | undefined; ; ) {
      const page = await store.search([], { limit: 500, ...(cursor ? { cursor } : {}) });
      for (const item of page.items) {
        for (const ref of findArtifactRefs(item.value)) {
          report.refs++;
          const why = await judge(ref);
          if (why) report.dangling.push({ ref, store: { namespace: item.namespace, key: item.key }, why });
        }
      }
      if (!page.cursor) break;
      cursor = page.cursor;
    }
  }

  report.ok = report.corrupt.length === 0 && report.dangling.length === 0;
  return report;
}
