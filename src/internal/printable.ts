/**
 * @module internal/printable
 * A decoded value as plain JSON can carry it, for the faces that show the user's
 * data (`cairn show`, the web inspector): what JSON has no form for (`undefined`,
 * a BigInt, `NaN`, `-0`, bytes) becomes a stand-in made by the caller's `raw`, a
 * Date its ISO string, a Map its `[key, value]` pairs, a Set its elements. Never a
 * codec tag.
 */

/**
 * `value` with every part JSON cannot hold replaced by `raw(text)`, where `text` is
 * how JavaScript writes it (`undefined`, `10n`, `NaN`, `-0`, `<3 bytes>`).
 *
 * @example
 * ```ts
 * printable({ n: 10n }, (text) => `<${text}>`); // { n: '<10n>' }
 * ```
 */
export function printable(value: unknown, raw: (text: string) => unknown): unknown {
  const walk = (v: unknown): unknown => {
    if (v === undefined) return raw('undefined');
    if (typeof v === 'bigint') return raw(`${v}n`);
    if (typeof v === 'number') return Number.isFinite(v) && !Object.is(v, -0) ? v : raw(Object.is(v, -0) ? '-0' : String(v));
    if (v === null || typeof v !== 'object') return v;
    if (v instanceof Date) return Number.isNaN(v.getTime()) ? raw('Invalid Date') : v.toISOString();
    if (v instanceof Uint8Array) return raw(`<${v.byteLength} bytes>`);
    if (v instanceof Map) return [...v.entries()].map(([k, x]) => [walk(k), walk(x)]);
    if (v instanceof Set) return [...v].map(walk);
    // An array hole shows as undefined, like a missing element.
    if (Array.isArray(v)) return Array.from(v, walk);
    const out: Record<string, unknown> = {};
    for (const [key, x] of Object.entries(v)) out[key] = walk(x);
    return out;
  };
  return walk(value);
}
