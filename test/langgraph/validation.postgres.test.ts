import { usePostgresSchema } from '../helpers/postgres.js';
import { validateOn } from './validation-kit.js';

const pg = usePostgresSchema();

validateOn({ name: 'postgres', create: () => pg.engine(), destroy: (engine) => engine.close() });
