// What the api-server's one-shot commands share: configuration, then the store opened and migrated, then the
// command's work, then the store closed. The database modules are loaded here, when a command runs, rather
// than with the CLI: `--help`, `--version` and argument errors answer without them, and `ingest` (which opens
// its store in its worker) never loads them on the main thread.
import { commandContext, type CommandContext } from '../common/cli-support.ts';
import type { Database, OpenOptions } from './db/database.ts';

/** The store, connected (or a clear error naming it), with the database modules loaded only now. */
export async function openStore(options: OpenOptions): Promise<Database> {
  const { openCheckedDatabase } = await import('./db/database.ts');
  return openCheckedDatabase(options);
}

export interface StoreOptions {
  /** PostgreSQL application_name, to tell the command's sessions apart in pg_stat_activity. */
  applicationName: string;
  poolSize?: number;
}

export async function withStore<T>(options: StoreOptions, work: (db: Database, context: CommandContext) => Promise<T>): Promise<T> {
  const context = await commandContext();
  const { config, log } = context;
  const db = await openStore({ config, log, applicationName: options.applicationName, poolSize: options.poolSize });
  try {
    const { migrate } = await import('./db/migrate.ts');
    await migrate(db.pool, log);
    return await work(db, context);
  } finally {
    await db.close();
  }
}
