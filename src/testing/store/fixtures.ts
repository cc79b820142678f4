/**
 * @module testing/store/fixtures
 * What the Store conformance tests share: the error check and the way they name items.
 */
import type { StoreItem } from '../../contracts/store.js';

export { expectError, sleep } from '../suite-kit.js';



/** Each item as `namespace/labels/key`. */
export const where = (items: StoreItem[]) => items.map((i) => [...i.namespace, i.key].join('/'));
