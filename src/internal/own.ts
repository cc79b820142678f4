/**
 * @module internal/own
 * Field and node names are data: a field called `toString` or a node called
 * `constructor` must not find Object.prototype's members when looked up in a record.
 */

/** `record[key]` when it is the record's own property, else undefined. */
export function own<T>(record: Readonly<Record<string, T>>, key: string): T | undefined {
  return Object.hasOwn(record, key) ? record[key] : undefined;
}
