/**
 * @module runtime/redacted-errors
 * The message of an error a run throws, through the app's redaction rules: a
 * validation error, a node's failure or a divergence names values, and whoever logs
 * it should not log what the rules hide. Only cairn's own errors are changed (their
 * message and stack, in place, so `instanceof` and `code` still hold); an error the
 * node threw stays the program's own, as its `cause`.
 */
import { CairnError } from '../errors.js';
import type { Redactor } from '../internal/redaction.js';

/** `error`, its message (and the message in its stack) redacted when it is a cairn error. */
export function redactError(error: unknown, redactor: Redactor): unknown {
  if (!redactor.active || !CairnError.is(error)) return error;
  const message = redactor.text(error.message);
  if (message !== error.message) {
    const stack = error.stack;
    error.message = message;
    if (stack) error.stack = redactor.text(stack);
  }
  return error;
}
