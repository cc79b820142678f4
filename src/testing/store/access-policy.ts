/**
 * @module testing/store/access-policy
 * Store conformance. Access policies: views acting as a principal, checked on every call, touching
 * nothing when denied.
 * Registered by {@link storeSuite}, inside its describe block.
 */
import { beforeEach, describe, expect, it } from 'vitest';
import type { Store } from '../../contracts/store.js';
import { AccessDeniedError, InvalidKeyError, InvalidOptionError } from '../../errors.js';
import { tenantPrefixPolicy } from '../../store/policy.js';
import { expectError, where } from './fixtures.js';
import type { StoreSuiteContext } from './context.js';

/** Registers the tests of this feature. */
export function accessPolicyTests(suite: StoreSuiteContext): void {
  let store: Store;

  describe('access policy', () => {
    beforeEach(() => {
      store = suite.store;
    });

    const acmeNs = ['tenant', 'acme', 'prefs'];

    it('without a policy a view allows everything', async () => {
      const view = store.as('anyone');
      expect(view.principal).toBe('anyone');
      await view.put(['x'], 'k', 1);
      expect((await view.get(['x'], 'k'))!.value).toBe(1);
    });

    it('tenantPrefixPolicy: a tenant works under its own prefix only, whole labels', async () => {
      store.setPolicy(tenantPrefixPolicy());
      const acme = store.as('acme');
      await acme.put(acmeNs, 'theme', 'dark');
      await acme.update<number>(['tenant', 'acme'], 'visits', (n = 0) => n + 1);
      expect((await acme.get(acmeNs, 'theme'))!.value).toBe('dark');
      expect(where(await acme.list(['tenant', 'acme']))).toEqual(['tenant/acme/visits', 'tenant/acme/prefs/theme']);
      expect(await acme.listNamespaces({ prefix: ['tenant', 'acme'] })).toEqual([['tenant', 'acme'], ['tenant', 'acme', 'prefs']]);
      await acme.batch([{ op: 'put', namespace: acmeNs, key: 'lang', value: 'en' }, { op: 'check', namespace: acmeNs, key: 'theme', version: 1 }]);
      expect(await acme.delete(acmeNs, 'lang')).toBe(true);
      expect(await acme.listOverwrites(['tenant', 'acme'])).toEqual([]);

      await store.put(['tenant', 'acme-corp'], 'secret', 's');
      const denied: [string, () => Promise<unknown>][] = [
        ['get of acme-corp', () => acme.get(['tenant', 'acme-corp'], 'secret')],
        ['put to acme-corp', () => acme.put(['tenant', 'acme-corp'], 'k', 1)],
        ['put to the tenant root', () => acme.put(['tenant'], 'k', 1)],
        ['put to globex', () => acme.put(['tenant', 'globex'], 'k', 1)],
        ['delete in acme-corp', () => acme.delete(['tenant', 'acme-corp'], 'secret')],
        ['update in acme-corp', () => acme.update(['tenant', 'acme-corp'], 'secret', () => 'mine')],
        ['search of every tenant', () => acme.search(['tenant'])],
        ['search of everything', () => acme.list([])],
        ['listNamespaces of everything', () => acme.listNamespaces()],
        ['sweep', () => acme.sweepExpired()],
        ['overwrites of every tenant', () => acme.listOverwrites(['tenant'])],
      ];
      for (const [label, call] of denied) {
        const error = await expectError(call, AccessDeniedError);
        expect(error.principal, label).toBe('acme');
      }
      expect((await store.get(['tenant', 'acme-corp'], 'secret'))!).toMatchObject({ value: 's', version: 1 });
      expect(where(await store.list(['tenant']))).toEqual(['tenant/acme/visits', 'tenant/acme/prefs/theme', 'tenant/acme-corp/secret']);
    });

    it('a denied operation touches nothing, even inside a batch of allowed ones', async () => {
      store.setPolicy(tenantPrefixPolicy());
      const acme = store.as('acme');
      const error = await expectError(
        () =>
          acme.batch([
            { op: 'put', namespace: acmeNs, key: 'mine', value: 1 },
            { op: 'put', namespace: ['tenant', 'globex'], key: 'theirs', value: 1 },
          ]),
        AccessDeniedError,
      );
      expect(error).toMatchObject({ principal: 'acme', namespace: ['tenant', 'globex'], operation: 'put' });
      expect(await store.list([])).toEqual([]);
    });

    it('an anonymous principal (null) is denied by tenantPrefixPolicy; shared prefixes open the listed operations', async () => {
      store.setPolicy(tenantPrefixPolicy({ shared: [{ prefix: ['public'], operations: ['get', 'search'] }] }));
      await store.put(['public', 'docs'], 'faq', 'text');
      const anon = store.as(null);
      expect(anon.principal).toBeNull();
      await expectError(() => anon.get(['tenant', 'null'], 'k'), AccessDeniedError);
      expect((await anon.get(['public', 'docs'], 'faq'))!.value).toBe('text');
      expect(await anon.list(['public'])).toHaveLength(1);
      await expectError(() => anon.put(['public', 'docs'], 'faq', 'defaced'), AccessDeniedError);
      await expectError(() => store.as('acme').delete(['public', 'docs'], 'faq'), AccessDeniedError);
      expect((await store.get(['public', 'docs'], 'faq'))!).toMatchObject({ value: 'text', version: 1 });
    });

    it('a custom policy sees (principal, namespace, operation) for every operation; anything but "allow" denies', async () => {
      const asked: [string | null, string[], string][] = [];
      store.setPolicy((principal, namespace, operation) => {
        asked.push([principal, [...namespace], operation]);
        return namespace[0] === 'open' ? 'allow' : ((true as unknown) as 'allow');
      });
      const view = store.as('p');
      await view.update(['open'], 'k', () => 1);
      await view.batch([{ op: 'check', namespace: ['open'], key: 'k', version: 1 }, { op: 'delete', namespace: ['open'], key: 'k' }]);
      await view.listNamespaces({ prefix: ['open'] });
      await expectError(() => view.get(['closed'], 'k'), AccessDeniedError);
      expect(asked).toEqual([
        ['p', ['open'], 'get'],
        ['p', ['open'], 'put'],
        ['p', ['open'], 'get'],
        ['p', ['open'], 'delete'],
        ['p', ['open'], 'listNamespaces'],
        ['p', ['closed'], 'get'],
      ]);
      store.setPolicy(null);
      expect(await view.get(['closed'], 'k')).toBeNull();
    });

    it('validates names before asking the policy: a malformed namespace is InvalidKeyError', async () => {
      let asked = 0;
      store.setPolicy(() => {
        asked++;
        return 'allow';
      });
      await expectError(() => store.as('p').get(['a', ''], 'k'), InvalidKeyError);
      await expectError(() => store.as('p').put('tenant' as never, 'k', 1), InvalidKeyError);
      expect(asked).toBe(0);
      await expectError(async () => store.setPolicy('allow' as never), InvalidOptionError);
    });
  });
}
