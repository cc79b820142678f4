/**
 * @module langgraph/checkpoint-index
 * Finds a LangGraph checkpoint id's position. Ids live in position bodies, which
 * engines do not index, so the saver keeps, per thread namespace, a map from id to
 * seq (and from a seq to its children, whose bodies hold the writes folded in from
 * it) built by reading the namespace's positions once, newest first, and extended
 * afterwards by reading only the positions above the highest seq it knows: another
 * process's checkpoints are found, and a long thread is read once per process.
 */
import type { Checkpointer } from '../contracts/checkpointer.js';
import { decode } from '../codec/tagged-json.js';
import type { PositionBody } from '../runtime/position.js';
import { langGraphRecord } from './saver-body.js';

/** Positions read per query while indexing. */
const PAGE = 500;

interface NamespaceEntries {
  ids: Map<string, number>;
  children: Map<number, number[]>;
  /** The highest seq indexed (-1: none yet). */
  upTo: number;
}

/** The id → seq index of every namespace a saver touched. */
export class CheckpointIndex {
  private readonly namespaces = new Map<string, NamespaceEntries>();

  constructor(private readonly cp: Checkpointer) {}

  /** The seq of checkpoint `id` in the namespace, or null when no position holds it. */
  async seqOf(threadId: string, ns: string, id: string): Promise<number | null> {
    const entries = this.entries(threadId, ns);
    const known = entries.ids.get(id);
    if (known !== undefined) return known;
    await this.refresh(threadId, ns, entries);
    return entries.ids.get(id) ?? null;
  }

  /** Seqs of the positions whose parent is `seq`, oldest first (after reading any newer positions). */
  async childrenOf(threadId: string, ns: string, seq: number): Promise<number[]> {
    const entries = this.entries(threadId, ns);
    await this.refresh(threadId, ns, entries);
    return entries.children.get(seq) ?? [];
  }

  /** Records a position this saver just committed. */
  add(threadId: string, ns: string, id: string, seq: number, parent: number | null): void {
    const entries = this.entries(threadId, ns);
    // Only contiguous knowledge moves `upTo`: a gap (another process's positions) is read later.
    if (seq === entries.upTo + 1) entries.upTo = seq;
    entries.ids.set(id, seq);
    if (parent !== null) this.addChild(entries, parent, seq);
  }

  /** Forgets a thread (deleted, or found to disagree with what is stored). */
  forget(threadId: string): void {
    for (const key of [...this.namespaces.keys()]) if (key.startsWith(`${threadId}\u0000`)) this.namespaces.delete(key);
  }

  private entries(threadId: string, ns: string): NamespaceEntries {
    const key = `${threadId}\u0000${ns}`;
    let entries = this.namespaces.get(key);
    if (!entries) this.namespaces.set(key, (entries = { ids: new Map(), children: new Map(), upTo: -1 }));
    return entries;
  }

  private addChild(entries: NamespaceEntries, parent: number, seq: number): void {
    const list = entries.children.get(parent);
    if (!list) entries.children.set(parent, [seq]);
    else if (!list.includes(seq)) {
      list.push(seq);
      list.sort((a, b) => a - b);
    }
  }

  private async refresh(threadId: string, ns: string, entries: NamespaceEntries): Promise<void> {
    // The head is the highest seq (every position takes head + 1): nothing above it, nothing to read.
    const head = await this.cp.getHead(threadId, ns);
    if (!head || head.seq <= entries.upTo) return;
    let beforeSeq: number | undefined;
    let highest = entries.upTo;
    for (;;) {
      const page = await this.cp.listPositions(threadId, ns, { limit: Math.min(PAGE, head.seq - entries.upTo), ...(beforeSeq !== undefined ? { beforeSeq } : {}) });
      let done = page.length < Math.min(PAGE, head.seq - entries.upTo);
      for (const position of page) {
        if (position.seq <= entries.upTo) {
          done = true;
          break;
        }
        highest = Math.max(highest, position.seq);
        const record = langGraphRecord(decode<PositionBody>(position.body));
        if (record) entries.ids.set(record.id, position.seq);
        if (position.parent !== null) this.addChild(entries, position.parent, position.seq);
      }
      if (done || page.length === 0) break;
      beforeSeq = page[page.length - 1]!.seq;
    }
    entries.upTo = highest;
  }
}
