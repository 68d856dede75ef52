// `blockfeed keys create|list|revoke`: the subscription keys of the token API (bearer) and the key API (X-API-Key / key=).
import type { Command } from 'commander';
import { printTable } from '../../common/cli-support.ts';
import { UserError } from '../../common/errors.ts';
import { withStore } from '../cli-context.ts';
import type { Database } from '../store/database.ts';
import { createKey, listKeys, revokeKey } from './store.ts';
import { parseTierQuotas, type Quota } from './tiers.ts';

function withKeyStore<T>(fn: (db: Database, tiers: Map<string, Quota>) => Promise<T>): Promise<T> {
  return withStore({ applicationName: 'blockfeed-keys', poolSize: 2 }, (db, { config }) => fn(db, parseTierQuotas(config.tierQuotas)));
}

function describeQuota(q: Quota | undefined): string {
  if (!q) return 'unknown tier';
  return q.kind === 'none' ? 'no API access (website download only)' : q.kind === 'unlimited' ? 'unlimited' : `${q.calls} calls/day`;
}

export function registerKeysCommands(program: Command): void {
  const keys = program.command('keys').description('manage API keys (the token API\'s bearer tokens and the key API\'s X-API-Key)');

  keys
    .command('create')
    .description('create a key and print it once (only its hash is stored)')
    .requiredOption('--tier <tier>', 'membership tier (see BLOCKFEED_TIER_QUOTAS; default tiers: member, basic, pro, enterprise)')
    .requiredOption('--name <name>', 'who or what the key is for')
    .action(async (opts: { tier: string; name: string }) => {
      await withKeyStore(async (db, tiers) => {
        if (!tiers.has(opts.tier)) throw new UserError(`--tier must be one of: ${[...tiers.keys()].join(', ')}; got "${opts.tier}"`);
        if (!opts.name.trim()) throw new UserError('--name must not be empty');
        const { key, record } = await createKey(db.pool, opts.tier, opts.name.trim());
        process.stdout.write(`${key}\n`);
        process.stderr.write(
          `created key ${record.id} (bf_${record.prefix}_…) for "${record.name}", tier ${record.tier}: ${describeQuota(tiers.get(record.tier))}.\n` +
            'The key is shown only this once; store it now.\n',
        );
      });
    });

  keys
    .command('list')
    .description('list keys (never the secrets)')
    .action(async () => {
      await withKeyStore(async (db, tiers) => {
        const rows = await listKeys(db.pool);
        const lines = [['ID', 'PREFIX', 'TIER', 'QUOTA', 'CREATED', 'REVOKED', 'NAME']];
        for (const k of rows) {
          lines.push([String(k.id), `bf_${k.prefix}`, k.tier, describeQuota(tiers.get(k.tier)), k.createdAt.toISOString(), k.revokedAt?.toISOString() ?? '-', k.name]);
        }
        printTable(lines);
      });
    });

  keys
    .command('revoke')
    .description('revoke a key by id or prefix (bf_xxxxxxxx); running servers refuse it at once')
    .argument('<key>', 'key id, prefix or the key itself')
    .action(async (which: string) => {
      await withKeyStore(async (db) => {
        const k = await revokeKey(db.pool, which);
        if (!k) throw new UserError(`no key with id or prefix "${which}" (see blockfeed keys list)`);
        process.stdout.write(`revoked key ${k.id} (bf_${k.prefix}) "${k.name}"\n`);
      });
    });
}
