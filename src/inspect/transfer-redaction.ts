/**
 * @module inspect/transfer-redaction
 * An export's records as a redacted export shows them: every stored value decoded,
 * passed through the thread's {@link Redactor} where it is shown (a field's value by
 * its path rules, a list field's items at their indexes, a recorded output or effect
 * outcome by its name, everything else by the patterns), and encoded again. The
 * bodies no longer match their chain hashes, and the snapshots (derived data) are
 * left out: a redacted export is for reading, and import refuses it
 * (`RedactedExportError`).
 */
import type { PositionItem } from '../contracts/checkpointer.js';
import { decode, encode } from '../codec/tagged-json.js';
import type { Redactor } from '../internal/redaction.js';
import type { PositionBody, StoredTaskResult, SuspendedStep } from '../runtime/position.js';
import type { TransferRecord } from './transfer-records.js';

function taskResult(r: Redactor, result: StoredTaskResult): StoredTaskResult {
  return { ...result, ...(result.writes ? { writes: r.state(result.writes) } : {}), interrupts: r.value(result.interrupts) as unknown[] };
}

function suspended(r: Redactor, step: SuspendedStep): SuspendedStep {
  const tasks: Record<string, StoredTaskResult> = {};
  for (const [task, result] of Object.entries(step.tasks)) tasks[task] = taskResult(r, result);
  const answers = step.answers ? Object.fromEntries(Object.entries(step.answers).map(([key, text]) => [key, encode(r.value(decode(text, `answer ${key}`)))])) : undefined;
  return { ...step, tasks, ...(answers ? { answers } : {}) };
}

function body(r: Redactor, text: string, where: string): string {
  const b = decode<PositionBody>(text, where);
  const changes: PositionBody['changes'] = {};
  for (const [field, change] of Object.entries(b.changes)) changes[field] = 'set' in change ? { set: r.field(field, change.set) } : change;
  const out: PositionBody = { ...b, changes, ...(b.interrupts ? { interrupts: r.value(b.interrupts) as PositionBody['interrupts'] } : {}), ...(b.suspended ? { suspended: suspended(r, b.suspended) } : {}) };
  return encode(out);
}

function items(r: Redactor, list: PositionItem[], where: string): PositionItem[] {
  return list.map((item) => ({ ...item, text: encode(r.items(item.field, item.index, [decode(item.text, `${where} item ${item.field}[${item.index}]`)])[0]) }));
}

/** `record` as a redacted export writes it (the header is the caller's). */
export function redactTransferRecord(r: Redactor, record: TransferRecord): TransferRecord {
  const shown = ((): TransferRecord => {
    switch (record.type) {
      case 'position': {
        const where = `position ${record.position.seq} of thread ${record.threadId}`;
        return { ...record, position: { ...record.position, body: body(r, record.position.body, where) }, items: items(r, record.items, where), snapshot: null };
      }
      case 'pending':
        return { ...record, write: { ...record.write, body: encode(taskResult(r, decode<StoredTaskResult>(record.write.body, `pending write ${record.write.task}`))) } };
      case 'ledger': {
        const { entry } = record;
        return entry.outcome === null ? record : { ...record, entry: { ...entry, outcome: encode(r.outcome(entry.kind, entry.name, decode(entry.outcome, `outcome of ${entry.key}`))) } };
      }
      default:
        return record;
    }
  })();
  // Last, everything (metadata, error messages, signal payloads, store values, the encoded texts too) through the patterns and what the rules hid.
  return r.value(shown) as TransferRecord;
}
