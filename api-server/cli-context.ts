// What the api-server's commands share: the configuration and a logger (commandContext), and for one-shot
// commands the store opened, checked and migrated around their work (withStore). The configuration and
// database modules are loaded when a command runs, not with the CLI: `--help`, `--version` and argument
// errors answer without them.
import { createLogger, type Logger } from '../common/logging.ts';
import type { Config } from './config.ts';
import type { Database } from './store/database.ts';

export interface CommandContext {
  config: Config;
  log: Logger;
}

/** Loads the configuration (environment, BLOCKFEED_CONFIG, overrides) and makes the logger. */
export async function commandContext(overrides: Partial<Config> = {}): Promise<CommandContext> {
  const { loadConfig } = await import('./config.ts');
  const config = loadConfig({ overrides });
  return { config, log: createLogger({ level: config.logLevel }) };
}

interface StoreOptions {
  /** PostgreSQL application_name, to tell the command's sessions apart in pg_stat_activity. */
  applicationName: string;
  poolSize?: number;
}

export async function withStore<T>(options: StoreOptions, work: (db: Database, context: CommandContext) => Promise<T>): Promise<T> {
  const context = await commandContext();
  const { openMigratedDatabase } = await import('./store/migrate.ts');
  const db = await openMigratedDatabase({ config: context.config, log: context.log, ...options });
  try {
    return await work(db, context);
  } finally {
    await db.close();
  }
}
