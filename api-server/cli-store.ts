// What the api-server's one-shot commands share: configuration, then the store opened, checked and
// migrated, then the command's work, then the store closed. The database modules are loaded here, when a
// command runs, rather than with the CLI: `--help`, `--version` and argument errors answer without them.
import { commandContext, type CommandContext } from '../common/cli-support.ts';
import type { Database } from './db/database.ts';

export interface StoreOptions {
  /** PostgreSQL application_name, to tell the command's sessions apart in pg_stat_activity. */
  applicationName: string;
  poolSize?: number;
}

export async function withStore<T>(options: StoreOptions, work: (db: Database, context: CommandContext) => Promise<T>): Promise<T> {
  const context = await commandContext();
  const { openMigratedDatabase } = await import('./db/migrate.ts');
  const db = await openMigratedDatabase({ config: context.config, log: context.log, ...options });
  try {
    return await work(db, context);
  } finally {
    await db.close();
  }
}
