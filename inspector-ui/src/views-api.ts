/** The answers of the richer views' routes (timeline, graph, ledger), as the page reads them. */
import type { PositionInfo } from './api';

export interface TimelineFailure {
  attempt: number | null;
  node: string | null;
  code: string;
  message: string;
  at: number;
}

export interface TimelineEntry extends PositionInfo {
  branch: number;
  failed: TimelineFailure[];
  retries: number;
  pending: boolean;
  artifacts: ArtifactRefView[];
}

export interface TimelineBranch {
  start: number;
  forkOf: number | null;
  parentBranch: number | null;
  depth: number;
  onHeadPath: boolean;
}

export interface TimelinePage {
  ns: string;
  status: string;
  head: number | null;
  positions: TimelineEntry[];
  branches: TimelineBranch[];
  next: number | null;
}

export interface DescribedNode {
  name: string;
  kind: 'node' | 'subgraph';
  interruptBefore?: true;
  interruptAfter?: true;
  retry?: true;
  child?: DescribedGraph;
}

export interface DescribedGraph {
  nodes: DescribedNode[];
  edges: { from: string; to: string | null; conditional?: true }[];
}

export interface CurrentNode {
  ns: string;
  path: string[];
  node: string;
  state: string;
}

export interface ThreadGraph {
  name: string;
  status: string;
  description: (DescribedGraph & { name: string }) | null;
  digest: string | null;
  versions: number;
  storedAt: number | null;
  current: CurrentNode[];
}

export interface ArtifactRefView {
  id: string;
  sha256: string;
  media_type: string;
  size_bytes: number;
}

/** A ledger entry as the ledger route gives it; `meta` (kind, model, usage, latencyMs) when the runtime recorded one. */
export interface LedgerEntryView {
  key: string;
  kind: string;
  name: string;
  ns: string;
  seq: number;
  node: string;
  task: string;
  call: number;
  argsDigest: string | null;
  status: string;
  outcome?: unknown;
  createdAt: number;
  completedAt: number | null;
  recovery?: string;
  needsAttention?: boolean;
  meta?: unknown;
}

export interface PositionLedger {
  seq: number;
  nodes: string[];
  records: LedgerEntryView[];
  effects: LedgerEntryView[];
  inProgress: LedgerEntryView[];
}

/** True for a value shaped like an artifact ref (`{ id, sha256, media_type, size_bytes }`). */
export function isArtifactRef(v: unknown): v is ArtifactRefView {
  if (!v || typeof v !== 'object' || Array.isArray(v)) return false;
  const r = v as Record<string, unknown>;
  return typeof r.id === 'string' && typeof r.sha256 === 'string' && /^[0-9a-f]{64}$/.test(r.sha256) && typeof r.media_type === 'string' && typeof r.size_bytes === 'number';
}
