// `blockfeed retention`: drops what is past retention now (serve also does this every hour).
import type { Command } from 'commander';
import { withStore } from '../cli-context.ts';
import { maintain, MARGIN_DAYS, RETENTION_DAYS } from './retention.ts';

export function registerRetentionCommands(program: Command): void {
  program
    .command('retention')
    .description(`drop raw events and rollups older than ${RETENTION_DAYS} days + ${MARGIN_DAYS} days margin, and compact the hourly rollups (serve does both hourly)`)
    .action(async () => {
      await withStore({ applicationName: 'blockfeed-retention', poolSize: 1 }, async (db) => {
        const r = await maintain(db.pool);
        process.stdout.write(
          `dropped ${r.droppedPartitions} partitions and ${r.removedAddresses} addresses older than ${r.cutoff.toISOString()}; ` +
            `compacted the hourly rollups of ${r.compaction.days} days into ${r.compaction.mergedRows} rows\n`,
        );
      });
    });
}
