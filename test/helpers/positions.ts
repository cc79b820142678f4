/**
 * A stand-in stored position for engine tests: root namespace, continuing the
 * previous seq, with a body that names it and a 64-hex hash derived from the seq.
 */
import type { StoredPosition } from '../../src/contracts/checkpointer.js';

export function linearPosition(seq: number, body = `{"kind":"step","seq":${seq}}`): StoredPosition {
  return {
    ns: '',
    seq,
    parent: seq === 0 ? null : seq - 1,
    segment: 0,
    step: seq,
    schemaVersion: 1,
    createdAt: 1_700_000_000_000 + seq,
    body,
    hash: (seq + 1).toString(16).padStart(64, '0'),
  };
}
