/**
 * @module langgraph/channel-values
 * How a LangGraph value (a channel value, a pending write, checkpoint metadata)
 * becomes a cairn value and back. Plain data (objects, arrays, strings, numbers,
 * Date, BigInt, bytes, Map, Set) is stored as it is, in cairn's own codec, so the
 * inspector and `cairn show` read it and a BigInt survives (LangGraph's JSON
 * serializer turns one into a placeholder string). Anything else (LangChain message
 * classes, a `Send`, a `Command`) goes through the saver's serializer and is kept
 * wrapped as `{ $langgraph: <type>, ... }`, revived on read.
 */
import type { SerializerProtocol } from '@langchain/langgraph-checkpoint';
import { decode, encode } from '../codec/tagged-json.js';
import { UnencodableValueError } from '../errors.js';

/** The key of a wrapped value. A plain object with this key of its own is wrapped too (as `plain`), so reads never mistake it. */
export const WRAP_KEY = '$langgraph';

/** A wrapped value as stored: serialized by the saver's serializer, or plain data that had the wrapper's key. */
type Wrapped =
  | { [WRAP_KEY]: 'json'; value: unknown }
  | { [WRAP_KEY]: 'plain'; value: unknown }
  | { [WRAP_KEY]: 'scalar'; value: unknown }
  | { [WRAP_KEY]: 'empty' }
  | { [WRAP_KEY]: string; bytes: Uint8Array };

/** A list item standing for a non-list value of a channel that held a list (its items are reset to this one). */
export const SCALAR = 'scalar';
/** The value of a channel that was emptied (in `newVersions`, absent from `channel_values`). */
export const EMPTY_TEXT = encode({ [WRAP_KEY]: 'empty' });

const textDecoder = new TextDecoder();

function isPlainContainer(value: object): boolean {
  const proto = Object.getPrototypeOf(value) as unknown;
  return proto === Object.prototype || proto === null || Array.isArray(value) || value instanceof Map || value instanceof Set || value instanceof Date || ArrayBuffer.isView(value);
}

/** True for a value stored wrapped (`{ $langgraph: … }`): it needs {@link ChannelValues.decode}; anything else is its own value. */
export function isWrapped(value: unknown): value is Wrapped {
  return typeof value === 'object' && value !== null && !Array.isArray(value) && Object.getPrototypeOf(value) === Object.prototype && Object.hasOwn(value, WRAP_KEY);
}

/**
 * Encodes and decodes values for one saver. Encodings of objects are remembered by
 * identity: LangGraph hands the saver the same message objects at every step, so a
 * long list costs a lookup per item, not an encoding.
 */
export class ChannelValues {
  private readonly texts = new WeakMap<object, string>();

  constructor(private readonly serde: SerializerProtocol) {}

  /**
   * The canonical cairn text of `value`'s stored form. `remember: false` for a value
   * that may still change in place (a pending write's: LangGraph's messages reducer
   * gives a written message its id when it applies the write, after it was handed over).
   */
  async encode(value: unknown, remember = true): Promise<string> {
    // Only class instances (messages, above all) are remembered: they are not changed in
    // place, while a plain object a node mutated would be read back from a stale text.
    const cacheable = typeof value === 'object' && value !== null && !isPlainContainer(value);
    if (cacheable) {
      const known = this.texts.get(value);
      if (known !== undefined) return known;
    }
    const text = await this.encodeFresh(value);
    if (cacheable && remember) this.texts.set(value, text);
    return text;
  }

  /**
   * Each item's text (a list channel's items are stored one by one). Items are
   * remembered by identity, plain objects too: LangGraph hands over the same item
   * objects at every step (a reducer returns a new list of the old items and the new
   * ones), so a long list costs a lookup per item, not an encoding. An item object
   * changed in place after it was stored is therefore not seen, as it is not by
   * LangGraph's own delta channels: state is to be replaced, not mutated.
   * `remember: false` as for {@link encode}.
   */
  async encodeItems(list: readonly unknown[], remember = true): Promise<string[]> {
    const texts = new Array<string>(list.length);
    for (let i = 0; i < list.length; i++) {
      const item = list[i];
      if (typeof item === 'object' && item !== null) {
        const known = this.texts.get(item);
        if (known !== undefined) {
          texts[i] = known;
          continue;
        }
        const text = await this.encodeFresh(item);
        if (remember) this.texts.set(item, text);
        texts[i] = text;
      } else texts[i] = await this.encode(item, remember);
    }
    return texts;
  }

  /** A channel value that is not a list, wrapped as the one item of a reset list (its channel held a list before). */
  async encodeScalarItem(value: unknown): Promise<string> {
    return `{"${WRAP_KEY}":"${SCALAR}","value":${await this.encode(value)}}`;
  }

  /** The value back from its stored form (as cairn's codec decoded it). */
  async decode(stored: unknown): Promise<unknown> {
    if (!isWrapped(stored)) return stored;
    const kind = stored[WRAP_KEY];
    if (kind === 'plain') return (stored as { value: unknown }).value;
    if (kind === SCALAR) return this.decode((stored as { value: unknown }).value);
    if (kind === 'json') return this.serde.loadsTyped('json', JSON.stringify((stored as { value: unknown }).value));
    return this.serde.loadsTyped(kind, (stored as { bytes: Uint8Array }).bytes);
  }

  /** Decodes a stored text (a pending write's value, metadata). */
  async decodeText(text: string): Promise<unknown> {
    return this.decode(decode(text));
  }

  private async encodeFresh(value: unknown): Promise<string> {
    if (isWrapped(value)) return `{"${WRAP_KEY}":"plain","value":${encode(value)}}`;
    try {
      return encode(value);
    } catch (error) {
      if (!UnencodableValueError.is(error)) throw error;
    }
    const [type, bytes] = await this.serde.dumpsTyped(value);
    if (type === 'json') {
      const json = JSON.parse(textDecoder.decode(bytes)) as unknown;
      // LangGraph's serializer answers what it cannot serialize (a BigInt inside a
      // message, a cycle) with a placeholder string: storing that would hand the next
      // read a string where an object was. Refused instead, before anything is written.
      if (typeof json === 'string') throw new UnencodableValueError('$', `LangGraph's serializer could not serialize this ${describe(value)} (it answered "${json.slice(0, 80)}")`);
      // Parsed and re-encoded: the chain hashes cairn's canonical form of the serializer's JSON.
      return `{"${WRAP_KEY}":"json","value":${encode(json)}}`;
    }
    return encode({ [WRAP_KEY]: type, bytes: bytes instanceof Uint8Array ? bytes : new TextEncoder().encode(String(bytes)) });
  }
}

function describe(value: unknown): string {
  const name = (Object.getPrototypeOf(value) as { constructor?: { name?: string } } | null)?.constructor?.name;
  return name ? `${name} instance` : typeof value;
}
