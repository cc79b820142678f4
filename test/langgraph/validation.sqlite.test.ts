import { sqliteOnFreshFiles } from '../conformance/sqlite-files.js';
import { validateOn } from './validation-kit.js';

validateOn(sqliteOnFreshFiles);
