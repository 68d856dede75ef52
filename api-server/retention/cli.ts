// `blockfeed retention`: drops what is past retention now (serve also does this every hour).
import type { Command } from 'commander';
import { commandContext } from '../../common/cli-support.ts';
import { openDatabase } from '../db/database.ts';
import { migrate } from '../db/migrate.ts';
import { applyRetention, MARGIN_DAYS, RETENTION_DAYS } from './retention.ts';

export function registerRetentionCommands(program: Command): void {
  program
    .command('retention')
    .description(`drop raw events and rollups older than ${RETENTION_DAYS} days + ${MARGIN_DAYS} days margin (serve does this hourly)`)
    .action(async () => {
      const { config, log } = commandContext();
      const db = await openDatabase({ config, log, applicationName: 'blockfeed-retention', poolSize: 1 });
      try {
        await migrate(db.pool, log);
        const r = await applyRetention(db.pool);
        process.stdout.write(
          `dropped ${r.droppedPartitions} partitions and ${r.removedAddresses} addresses older than ${r.cutoff.toISOString()}\n`,
        );
      } finally {
        await db.close();
      }
    });
}
