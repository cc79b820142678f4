/**
 * @module state/definition-checks
 * What `field.model`, `field.runtime` and `defineState` check of what they are given,
 * when they are given it: a key they do not take, or a value of the wrong kind, is
 * SchemaDefinitionError at once. Left unchecked, each fails much later or never:
 * `reduce: 'apend'` was called as a function at the first write, a misspelt
 * `defualt` made every new thread fail validation, a zod schema given in place of a
 * field was taken for a field with no role, and a misspelt `upcats` left stored
 * threads unreadable with the upcasters written and never used.
 */
import { SchemaDefinitionError } from '../errors.js';
import { isStandardSchema } from '../internal/standard-schema.js';
import { unknownOption } from '../internal/option-keys.js';

const shown = (value: unknown): string => (typeof value === 'function' ? 'a function' : (JSON.stringify(value) ?? String(value)));

function checkKeys(what: string, options: object, known: readonly string[]): void {
  const unknown = unknownOption(what, options, known);
  if (unknown) throw new SchemaDefinitionError(unknown);
}

function checkObject(what: string, value: unknown): asserts value is Record<string, unknown> {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) throw new SchemaDefinitionError(`${what} takes an options object, not ${shown(value)}.`);
}

function checkSchema(what: string, schema: unknown): void {
  if (!isStandardSchema(schema)) throw new SchemaDefinitionError(`${what} takes a Standard Schema first (a zod schema, for one), not ${shown(schema)}.`);
}

/** `field.model(schema, options)`. */
export function checkModelFieldOptions(schema: unknown, options: unknown): void {
  checkSchema('field.model', schema);
  checkObject('field.model', options);
  checkKeys('field.model', options, ['reduce', 'default', 'onConflict', 'redact']);
  const { reduce, onConflict, redact } = options;
  if (reduce !== undefined && reduce !== 'replace' && reduce !== 'append' && typeof reduce !== 'function') {
    throw new SchemaDefinitionError(`field.model: reduce must be 'replace', 'append' or a function (current, update) => next, not ${shown(reduce)}.`);
  }
  if (onConflict !== undefined && onConflict !== 'reject' && onConflict !== 'lastWins') throw new SchemaDefinitionError(`field.model: onConflict must be 'reject' or 'lastWins', not ${shown(onConflict)}.`);
  if (redact !== undefined && typeof redact !== 'boolean') throw new SchemaDefinitionError(`field.model: redact must be true or false, not ${shown(redact)}.`);
}

/** `field.runtime(schema, options)`. */
export function checkRuntimeFieldOptions(schema: unknown, options: unknown): void {
  checkSchema('field.runtime', schema);
  checkObject('field.runtime', options);
  checkKeys('field.runtime', options, ['compute', 'default', 'redact']);
  if (options.compute !== undefined && typeof options.compute !== 'function') throw new SchemaDefinitionError(`field.runtime: compute must be a function of the step, not ${shown(options.compute)}.`);
  if (options.redact !== undefined && typeof options.redact !== 'boolean') throw new SchemaDefinitionError(`field.runtime: redact must be true or false, not ${shown(options.redact)}.`);
}

const DEFINITION_KEYS = ['version', 'schemaVersion', 'oldestReadableVersion', 'fields', 'derived', 'upcast', 'onConflict', 'maxFieldBytes'];

/** `defineState(definition)`, before the schema is built from it. */
export function checkStateDefinition(definition: unknown): void {
  if (definition === null || typeof definition !== 'object' || Array.isArray(definition)) throw new SchemaDefinitionError(`defineState takes a definition object ({ fields, … }), not ${shown(definition)}.`);
  checkKeys('defineState', definition, DEFINITION_KEYS);
  const { version, schemaVersion, fields, derived, upcast, onConflict, maxFieldBytes } = definition as Record<string, unknown>;
  if (version !== undefined && schemaVersion !== undefined && version !== schemaVersion) {
    throw new SchemaDefinitionError(`defineState: version ${shown(version)} and schemaVersion ${shown(schemaVersion)} name one thing: give one of them.`);
  }
  if (fields === null || typeof fields !== 'object' || Array.isArray(fields)) throw new SchemaDefinitionError(`defineState: fields must be an object of field.model(...) and field.runtime(...) declarations, not ${shown(fields)}.`);
  for (const name of [...Object.keys(fields), ...(derived !== null && typeof derived === 'object' ? Object.keys(derived) : [])]) {
    // Assigning "__proto__" sets an object's prototype instead of a property: no state
    // object could hold it as a field. Every other name is data (constructor, toString...).
    if (name === '__proto__') throw new SchemaDefinitionError('"__proto__" cannot name a state field: rename it (any other name works).');
  }
  for (const [name, declared] of Object.entries(fields)) {
    const role = (declared as { role?: unknown } | null)?.role;
    if (role === 'model' || role === 'runtime') continue;
    const hint = isStandardSchema(declared) ? `: wrap the schema, field.model(schema)` : '';
    throw new SchemaDefinitionError(`defineState: field "${name}" must be declared with field.model(...) or field.runtime(...), not ${isStandardSchema(declared) ? 'a bare schema' : shown(declared)}${hint}.`);
  }
  if (derived !== undefined) {
    if (derived === null || typeof derived !== 'object' || Array.isArray(derived)) throw new SchemaDefinitionError(`defineState: derived must be an object of functions of the state, not ${shown(derived)}.`);
    for (const [name, fn] of Object.entries(derived)) {
      if (typeof fn !== 'function') throw new SchemaDefinitionError(`defineState: derived "${name}" must be a function of the state, not ${shown(fn)}.`);
    }
  }
  if (upcast !== undefined) {
    if (upcast === null || typeof upcast !== 'object' || Array.isArray(upcast)) throw new SchemaDefinitionError(`defineState: upcast must be an object of version → function, not ${shown(upcast)}.`);
    for (const [from, fn] of Object.entries(upcast)) {
      if (!/^[1-9][0-9]*$/.test(from)) throw new SchemaDefinitionError(`defineState: upcast keys are the versions they upcast from (1, 2, …), not ${JSON.stringify(from)}.`);
      if (typeof fn !== 'function') throw new SchemaDefinitionError(`defineState: upcast[${from}] must be a function of the version-${from} state, not ${shown(fn)}.`);
    }
  }
  if (onConflict !== undefined && onConflict !== 'reject' && onConflict !== 'lastWins') throw new SchemaDefinitionError(`defineState: onConflict must be 'reject' or 'lastWins', not ${shown(onConflict)}.`);
  if (maxFieldBytes !== undefined && (typeof maxFieldBytes !== 'number' || !Number.isSafeInteger(maxFieldBytes) || maxFieldBytes < 1)) {
    throw new SchemaDefinitionError(`defineState: maxFieldBytes must be a whole number of bytes, 1 or more, not ${shown(maxFieldBytes)}.`);
  }
}
