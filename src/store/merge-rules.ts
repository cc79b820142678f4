/**
 * @module store/merge-rules
 * Declared merge rules: which {@link MergeRule} settles a conflicting write in a
 * namespace. A declaration covers every namespace under its prefix (bounded at label
 * boundaries); the longest declared prefix wins; undeclared namespaces `reject`.
 *
 * @example
 * ```ts
 * const rules = new MergeRules();
 * rules.declare(['prefs'], { merge: 'lastWins' });
 * rules.of(['prefs', 'u42']); // 'lastWins'
 * rules.of(['prefsx']);       // 'reject'
 * ```
 */
import type { MergeRule, NamespaceDeclaration } from '../contracts/store.js';
import { InvalidOptionError } from '../errors.js';
import { encodeNamespace } from '../internal/keys.js';
import { unknownOption } from '../internal/option-keys.js';

export class MergeRules {
  /** Encoded prefix → rule. */
  private readonly declared = new Map<string, MergeRule>();

  declare(prefix: string[], declaration: NamespaceDeclaration): void {
    const ns = encodeNamespace(prefix);
    const rule = (declaration as { merge?: unknown } | undefined)?.merge;
    const unknown = declaration !== null && typeof declaration === 'object' ? unknownOption(`declare(${JSON.stringify(prefix)})`, declaration, ['merge']) : undefined;
    if (unknown) throw new InvalidOptionError(unknown);
    if (rule !== 'reject' && rule !== 'lastWins' && typeof rule !== 'function') {
      throw new InvalidOptionError(`declare(${JSON.stringify(prefix)}): merge must be 'reject', 'lastWins' or a function (current, incoming) => merged.`);
    }
    this.declared.set(ns, rule as MergeRule);
  }

  of(namespace: string[]): MergeRule {
    const ns = encodeNamespace(namespace);
    let best: { length: number; rule: MergeRule } | undefined;
    // Encoded prefixes end with the separator, so startsWith is bounded at labels.
    for (const [prefix, rule] of this.declared) {
      if (ns.startsWith(prefix) && (!best || prefix.length > best.length)) best = { length: prefix.length, rule };
    }
    return best?.rule ?? 'reject';
  }
}
