import { memory } from '../../src/engines/memory/index.js';
import { validateOn } from './validation-kit.js';

validateOn({ name: 'memory', create: () => memory(), destroy: (engine) => engine.close() });
