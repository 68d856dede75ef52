// `blockfeed reclassify`: refresh every address's enrichment and scanner identity (docs/data-model.md).
import type { Command } from 'commander';
import { commandContext } from '../../common/cli-support.ts';
import { openDatabase } from '../db/database.ts';
import { migrate } from '../db/migrate.ts';
import { sharedEnricher } from './enricher.ts';
import { reclassify } from './reclassify.ts';

export function registerReclassifyCommands(program: Command): void {
  program
    .command('reclassify')
    .description('recompute every stored address’s country, ASN, carrier, network type and scanner identity (after updating data/ or the lookup packages)')
    .action(async () => {
      const { config, log } = commandContext();
      const db = await openDatabase({ config, log, applicationName: 'blockfeed-reclassify', poolSize: 1 });
      try {
        await migrate(db.pool, log);
        const r = await reclassify(db.pool, sharedEnricher());
        process.stdout.write(`reclassified ${r.addresses} addresses, ${r.changed} changed\n`);
      } finally {
        await db.close();
      }
    });
}
