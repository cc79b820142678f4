/**
 * A form built from a JSON Schema (as an interrupt keeps its answer's: draft 2020-12,
 * from zod 4): strings, numbers and integers, booleans, enums and nested objects get
 * their own inputs (`name` = the value's path, `shipTo.city`); anything else (lists,
 * unions, records) a JSON box of its own. The whole value can always be edited as
 * JSON instead. The form only shapes the value: the schema in the graph's code
 * checks it when the thread resumes, and its error is what the page shows.
 */
import { useState } from 'preact/hooks';

/** The parts of a JSON Schema the form reads. */
export interface JsonSchema {
  type?: string | string[];
  enum?: unknown[];
  const?: unknown;
  properties?: Record<string, JsonSchema>;
  required?: string[];
  description?: string;
  title?: string;
  minimum?: number;
  maximum?: number;
}

type Kind = 'string' | 'number' | 'integer' | 'boolean' | 'enum' | 'object' | 'json';

/** Which input a schema gets. */
function kindOf(schema: JsonSchema): Kind {
  if (Array.isArray(schema.enum) && schema.enum.every((v) => typeof v === 'string' || typeof v === 'number')) return 'enum';
  const type = Array.isArray(schema.type) ? undefined : schema.type;
  if (type === 'object' && schema.properties) return 'object';
  if (type === 'string' || type === 'number' || type === 'integer' || type === 'boolean') return type;
  return 'json';
}

/** The value a fresh form starts from: required booleans false, objects with their required parts, the rest unset. */
export function initialValue(schema: JsonSchema, required = true): unknown {
  const kind = kindOf(schema);
  if (kind === 'boolean') return required ? false : undefined;
  if (kind === 'object') {
    const out: Record<string, unknown> = {};
    for (const [key, inner] of Object.entries(schema.properties ?? {})) {
      const value = initialValue(inner, (schema.required ?? []).includes(key));
      if (value !== undefined) out[key] = value;
    }
    return required ? out : undefined;
  }
  return undefined;
}

/** True when the form can give this schema inputs of its own (else the page offers only JSON). */
export function describesForm(schema: JsonSchema | undefined): schema is JsonSchema {
  return schema !== undefined && kindOf(schema) !== 'json';
}

interface FieldProps {
  schema: JsonSchema;
  path: string;
  label: string;
  required: boolean;
  value: unknown;
  onChange(value: unknown): void;
}

/** A JSON box for one value: parsed as typed; an unparsable text keeps the last good value and says why. */
function JsonBox({ value, onChange, name, rows = 3 }: { value: unknown; onChange(value: unknown): void; name: string; rows?: number }) {
  const [text, setText] = useState(value === undefined ? '' : JSON.stringify(value, null, 2));
  const [problem, setProblem] = useState('');
  return (
    <span class="json-box">
      <textarea
        name={name}
        rows={rows}
        value={text}
        onInput={(e) => {
          const next = (e.target as HTMLTextAreaElement).value;
          setText(next);
          if (next.trim() === '') {
            setProblem('');
            onChange(undefined);
            return;
          }
          try {
            onChange(JSON.parse(next));
            setProblem('');
          } catch (error) {
            setProblem((error as Error).message);
          }
        }}
      />
      {problem && <span class="error" data-testid="json-problem">not JSON: {problem}</span>}
    </span>
  );
}

function Field({ schema, path, label, required, value, onChange }: FieldProps) {
  const kind = kindOf(schema);
  const hint = schema.description ? <span class="hint"> {schema.description}</span> : null;
  const title = (
    <span class="field-label">
      {label}
      {required ? '' : ' (optional)'}
    </span>
  );
  if (kind === 'object') {
    const object = (value ?? {}) as Record<string, unknown>;
    return (
      <fieldset class="schema-object" data-path={path}>
        {path && <legend>{title}</legend>}
        {hint}
        {Object.entries(schema.properties ?? {}).map(([key, inner]) => (
          <Field
            key={key}
            schema={inner}
            path={path ? `${path}.${key}` : key}
            label={key}
            required={(schema.required ?? []).includes(key)}
            value={object[key]}
            onChange={(v) => {
              const next = { ...object };
              if (v === undefined) delete next[key];
              else next[key] = v;
              onChange(next);
            }}
          />
        ))}
      </fieldset>
    );
  }
  const name = path || 'answer';
  let input;
  switch (kind) {
    case 'boolean':
      input = required ? (
        <input type="checkbox" name={name} checked={value === true} onChange={(e) => onChange((e.target as HTMLInputElement).checked)} />
      ) : (
        <select name={name} value={value === undefined ? '' : String(value)} onChange={(e) => onChange(({ '': undefined, true: true, false: false } as Record<string, boolean | undefined>)[(e.target as HTMLSelectElement).value])}>
          <option value="">unset</option>
          <option value="true">true</option>
          <option value="false">false</option>
        </select>
      );
      break;
    case 'enum':
      input = (
        <select
          name={name}
          value={value === undefined ? '' : String(value)}
          onChange={(e) => {
            const picked = (e.target as HTMLSelectElement).value;
            onChange(picked === '' ? undefined : schema.enum!.find((v) => String(v) === picked));
          }}
        >
          <option value="">{required ? 'choose…' : 'unset'}</option>
          {schema.enum!.map((v) => (
            <option key={String(v)} value={String(v)}>
              {String(v)}
            </option>
          ))}
        </select>
      );
      break;
    case 'number':
    case 'integer':
      input = (
        <input
          type="number"
          name={name}
          step={kind === 'integer' ? 1 : 'any'}
          value={typeof value === 'number' ? String(value) : ''}
          onInput={(e) => {
            const text = (e.target as HTMLInputElement).value;
            onChange(text === '' ? undefined : Number(text));
          }}
        />
      );
      break;
    case 'string':
      input = <input type="text" name={name} value={typeof value === 'string' ? value : ''} onInput={(e) => onChange(optionalText((e.target as HTMLInputElement).value, required))} />;
      break;
    default:
      input = <JsonBox name={name} value={value} onChange={onChange} />;
  }
  return (
    <label class="schema-field" data-path={path}>
      {title} {input}
      {hint}
    </label>
  );
}

/** An optional string left empty is left out, not sent as "". */
function optionalText(text: string, required: boolean): string | undefined {
  return text === '' && !required ? undefined : text;
}

/**
 * The form of `schema`, controlled: `value` is what it shows, `onChange` gets the
 * new value. With `asJson` the whole value is one JSON box.
 */
export function SchemaForm({ schema, value, onChange, asJson }: { schema: JsonSchema | undefined; value: unknown; onChange(value: unknown): void; asJson: boolean }) {
  if (asJson || !describesForm(schema)) return <JsonBox name="answer-json" rows={6} value={value} onChange={onChange} />;
  return <Field schema={schema} path="" label="answer" required value={value} onChange={onChange} />;
}
