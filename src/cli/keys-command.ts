/**
 * @module cli/keys-command
 * `cairn keys rotate [--scope S] [--data-keys]`: rotates the key-encryption key of
 * every scope of an encrypted database (or of one), and re-wraps the scope's data
 * keys under the new one: a few small rows; no data row is read or rewritten, so the
 * chain hashes and every row stay as they are. `--data-keys` also makes a new data key
 * current for each scope (new writes use it; old rows keep opening with theirs).
 * Exit 1 when the database is not encrypted, no keys were given, or `--scope` names a
 * scope without data keys (a typo: nothing is rotated).
 */
import type { Command } from 'commander';
import { KeysRequiredError } from '../errors.js';
import { DB_OPTION, cliKeyProvider, openEngine } from './engine-url.js';

interface RotateOptions {
  db: string;
  scope?: string;
  dataKeys?: boolean;
  json?: boolean;
}

/** Registers `cairn keys`. */
export function registerKeysCommand(program: Command): void {
  const keys = program.command('keys').description('key management of an encrypted database (--keys <key file>, CAIRN_KEY_FILE or CAIRN_MASTER_KEY)');
  keys
    .command('rotate')
    .description('rotate the key-encryption key of every scope (or --scope S) and re-wrap its data keys; no data row is rewritten')
    .option(...DB_OPTION)
    .option('--scope <scope>', 'only this scope (tenant:<id>, thread:<id>, store...)')
    .option('--data-keys', 'also make a new data key current for each scope (new writes use it)')
    .option('--json', 'print what was rotated as JSON')
    .action(async (options: RotateOptions) => {
      if (!cliKeyProvider()) throw new KeysRequiredError('keys rotate needs the keys: pass --keys <key file>, or set CAIRN_KEY_FILE or CAIRN_MASTER_KEY.');
      const engine = await openEngine(options.db, 'write');
      try {
        const { provider, keyring } = engine.encryption!;
        const withKeys = [...new Set((await keyring.listKeys()).map((row) => row.scope))].sort();
        // A mistyped scope would get a new KEK of its own and a report of 0 keys re-wrapped, exit 0, while the scope meant kept its old KEK.
        if (options.scope !== undefined && !withKeys.includes(options.scope)) {
          const known = withKeys.length ? `the scopes with data keys: ${withKeys.slice(0, 20).join(', ')}${withKeys.length > 20 ? ', …' : ''}` : 'no scope has data keys yet';
          if (options.json) process.stdout.write(JSON.stringify({ rotated: [] }, null, 2) + '\n');
          process.stderr.write(`no scope ${JSON.stringify(options.scope)} has data keys in this database: nothing rotated (${known}).\n`);
          process.exitCode = 1;
          return;
        }
        const scopes = options.scope !== undefined ? [options.scope] : withKeys;
        const rotated: { scope: string; kek: string; rewrapped: number; dataKey?: string }[] = [];
        for (const scope of scopes) {
          const kek = await provider.rotate(scope);
          const rewrapped = await keyring.rewrap(scope);
          const dataKey = options.dataKeys ? (await keyring.rotateDataKey(scope)).id : undefined;
          rotated.push({ scope, kek, rewrapped, ...(dataKey ? { dataKey } : {}) });
        }
        if (options.json) process.stdout.write(JSON.stringify({ rotated }, null, 2) + '\n');
        else if (rotated.length === 0) process.stdout.write('no scope has data keys yet: nothing to rotate\n');
        else for (const r of rotated) process.stdout.write(`${r.scope}: key-encryption key ${r.kek}, ${r.rewrapped} data key(s) re-wrapped${r.dataKey ? `, new data key ${r.dataKey}` : ''}\n`);
      } finally {
        await engine.close();
      }
    });
}
