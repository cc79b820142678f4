/**
 * @module store/policy
 * Access policies for stores: a function (principal, namespace, operation) →
 * `allow | deny`, the ready {@link tenantPrefixPolicy}, and {@link scopedStore}, the
 * view that checks every call before it reaches storage. Everything a call names is
 * validated and authorised before the first read or write, so a denied call (a batch
 * with one denied operation included) touches nothing.
 *
 * @example
 * ```ts
 * engine.store.setPolicy(tenantPrefixPolicy());
 * const acme = engine.store.as('acme');
 * await acme.put(['tenant', 'acme', 'prefs'], 'theme', 'dark');   // allowed
 * await acme.get(['tenant', 'globex', 'prefs'], 'theme');         // AccessDeniedError
 * ```
 */
import type {
  AccessPolicy,
  ListNamespacesOptions,
  ScopedStore,
  StoreApi,
  StoreOp,
  StoreOperation,
} from '../contracts/store.js';
import { AccessDeniedError, InvalidOptionError } from '../errors.js';
import { encodeNamespace } from '../internal/keys.js';

/** Options of {@link tenantPrefixPolicy}. */
export interface TenantPrefixPolicyOptions {
  /** Labels before the tenant's label. Default `['tenant']`: a tenant owns `['tenant', <tenant>, ...]`. */
  root?: string[];
  /** Prefixes open to every principal (a tenant too), for the listed operations only. */
  shared?: { prefix: string[]; operations: StoreOperation[] }[];
}

function startsWith(namespace: readonly string[], prefix: readonly string[]): boolean {
  return prefix.length <= namespace.length && prefix.every((label, i) => namespace[i] === label);
}

/**
 * A tenant may do anything under `[...root, tenant]` (whole labels: tenant `acme` owns
 * nothing under `acme-corp`), and the listed operations under the shared prefixes;
 * everything else is denied, and so is everything for a principal without a tenant
 * (null). `sweep` is never allowed: maintenance belongs to the trusted store.
 *
 * @example
 * ```ts
 * store.setPolicy(tenantPrefixPolicy({ shared: [{ prefix: ['public'], operations: ['get', 'search'] }] }));
 * ```
 */
export function tenantPrefixPolicy(options: TenantPrefixPolicyOptions = {}): AccessPolicy {
  const root = [...(options.root ?? ['tenant'])];
  encodeNamespace(root);
  const shared = (options.shared ?? []).map((s) => {
    encodeNamespace(s.prefix);
    return { prefix: [...s.prefix], operations: new Set(s.operations) };
  });
  return (principal, namespace, operation) => {
    if (operation === 'sweep') return 'deny';
    if (principal !== null && startsWith(namespace, [...root, principal])) return 'allow';
    for (const s of shared) if (s.operations.has(operation) && startsWith(namespace, s.prefix)) return 'allow';
    return 'deny';
  };
}

/**
 * A view of `store` acting as `principal`: each call validates the namespaces it names,
 * asks `policy()` (read at call time; null allows everything) for every one of them,
 * and only then calls the store.
 */
export function scopedStore(store: StoreApi, policy: () => AccessPolicy | null, principal: string | null): ScopedStore {
  if (principal !== null && typeof principal !== 'string') throw new InvalidOptionError(`a principal is a string or null, got ${typeof principal}.`);
  const authorize = (checks: [readonly string[], StoreOperation][]): void => {
    // Validate everything first: a policy never sees a malformed namespace.
    for (const [namespace] of checks) encodeNamespace(namespace);
    const decide = policy();
    if (!decide) return;
    for (const [namespace, operation] of checks) {
      const copy = Object.freeze([...namespace]);
      // Anything but an explicit 'allow' (a typo, undefined) denies: fail closed.
      if (decide(principal, copy, operation) !== 'allow') throw new AccessDeniedError(principal, [...namespace], operation);
    }
  };
  const opChecks = (ops: StoreOp[]): [readonly string[], StoreOperation][] => {
    if (!Array.isArray(ops)) throw new InvalidOptionError('batch() takes an array of operations.');
    return ops.map((op) => [op?.namespace, op?.op === 'check' ? 'get' : op?.op === 'delete' ? 'delete' : 'put']);
  };
  return {
    principal,
    async get(namespace, key) {
      authorize([[namespace, 'get']]);
      return store.get(namespace, key);
    },
    async put(namespace, key, value, options) {
      authorize([[namespace, 'put']]);
      return store.put(namespace, key, value, options);
    },
    async update(namespace, key, fn, options) {
      authorize([
        [namespace, 'get'],
        [namespace, 'put'],
      ]);
      return store.update(namespace, key, fn, options);
    },
    async delete(namespace, key, options) {
      authorize([[namespace, 'delete']]);
      return store.delete(namespace, key, options);
    },
    async search(prefix, options) {
      authorize([[prefix, 'search']]);
      return store.search(prefix, options);
    },
    async list(prefix, options) {
      authorize([[prefix, 'search']]);
      return store.list(prefix, options);
    },
    async listNamespaces(options?: ListNamespacesOptions | null) {
      // The prefix of options the store itself will refuse (not an object) is none: it is refused there.
      const prefix = typeof options === 'object' && options !== null ? options.prefix : undefined;
      authorize([[prefix ?? [], 'listNamespaces']]);
      return store.listNamespaces(options ?? undefined);
    },
    async batch(ops) {
      authorize(opChecks(ops));
      return store.batch(ops);
    },
    async sweepExpired() {
      authorize([[[], 'sweep']]);
      return store.sweepExpired();
    },
    async listOverwrites(prefix, options) {
      authorize([[prefix, 'listOverwrites']]);
      return store.listOverwrites(prefix, options);
    },
  };
}
