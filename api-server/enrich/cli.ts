// `blockfeed reclassify`: refresh every address's enrichment and scanner identity (docs/data-model.md).
import type { Command } from 'commander';
import { withStore } from '../cli-context.ts';

export function registerReclassifyCommands(program: Command): void {
  program
    .command('reclassify')
    .description('recompute every stored address’s country, ASN, carrier, network type and scanner identity (after updating data/ or the lookup packages)')
    .action(async () => {
      await withStore({ applicationName: 'blockfeed-reclassify', poolSize: 1 }, async (db) => {
        const [{ sharedEnricher }, { reclassify }] = await Promise.all([import('./enricher.ts'), import('./reclassify.ts')]);
        const r = await reclassify(db.pool, sharedEnricher());
        process.stdout.write(`reclassified ${r.addresses} addresses, ${r.changed} changed\n`);
      });
    });
}
