/**
 * @module testing/store.suite
 * The conformance suite of the {@link Store} contract: versions (increasing by one,
 * never backwards across deletes or expiry), compare-and-set with `ifVersion`,
 * `update`'s loop, idempotent retries, tagged-value round trips, copies, prefix
 * listing bounded at label boundaries, search filters (every operator, type
 * strictness, code point order, and filter injection: SQL-looking paths are
 * rejected, SQL-looking values match only themselves; values with lone surrogates
 * break no search and read back exactly), paging by cursor and
 * offset, listNamespaces, TTL and sweeping, atomic batches, the nesting depth limit
 * (MAX_VALUE_DEPTH levels stored and searchable, one more refused), declared merge rules
 * (reject / lastWins with its overwrite records / merge functions), access
 * policies, and validation before anything is stored. Every engine runs it; the
 * store's `capabilities` decide which tests apply (a skipped test says why). The
 * tests live in one file per feature under `testing/store/`; this function
 * registers them all.
 *
 * @example
 * ```ts
 * import { storeSuite } from 'cairn/testing';
 * import { memory } from 'cairn/memory';
 * storeSuite({ name: 'memory', create: () => memory() });
 * ```
 */
import { describe } from 'vitest';
import { accessPolicyTests } from './store/access-policy.js';
import { batchTests } from './store/batch.js';
import { capabilityTests } from './store/capabilities.js';
import { storeContext, type StoreSuiteOptions } from './store/context.js';
import { expiryTests } from './store/expiry.js';
import { lifecycleTests } from './store/lifecycle.js';
import { listingTests } from './store/listing.js';
import { mergeRuleTests } from './store/merge-rules.js';
import { purgeTests } from './store/purge.js';
import { readWriteTests } from './store/reads-and-writes.js';
import { searchTests } from './store/search.js';
import { updateTests } from './store/update.js';
import { validationTests } from './store/validation.js';

export type { StoreSuiteOptions } from './store/context.js';

/**
 * Registers the Store conformance tests for one engine.
 *
 * @example `storeSuite({ name: 'sqlite', create: () => sqlite(tempFile()) })`
 */
export function storeSuite(options: StoreSuiteOptions): void {
  describe(`Store conformance: ${options.name}`, () => {
    const suite = storeContext(options);
    readWriteTests(suite);
    listingTests(suite);
    validationTests(suite);
    capabilityTests(suite);
    updateTests(suite);
    searchTests(suite);
    expiryTests(suite);
    batchTests(suite);
    mergeRuleTests(suite);
    accessPolicyTests(suite);
    purgeTests(suite);
    lifecycleTests(suite);
  });
}
