// The api-server's commands in the blockfeed CLI.
import type { Command } from 'commander';
import { commandContext, parseIntegerOption } from '../common/cli-support.ts';
import { openDatabase } from './db/database.ts';
import { migrate } from './db/migrate.ts';
import { serve } from './serve.ts';
import { registerKeysCommands } from './keys/cli.ts';

export function registerApiServerCommands(program: Command): void {
  program
    .command('serve')
    .description('run the blocklist HTTP API (embedded PostgreSQL in BLOCKFEED_DATA_DIR unless DATABASE_URL is set)')
    .option('-p, --port <port>', 'listen port (env PORT, default 8080)', parseIntegerOption('--port', 0, 65535))
    .option('--host <address>', 'listen address (env HOST, default 0.0.0.0)')
    .action(async (opts: { port?: number; host?: string }) => {
      await serve(commandContext({ port: opts.port, host: opts.host }));
    });

  program
    .command('migrate')
    .description('apply pending database migrations and exit')
    .action(async () => {
      const { config, log } = commandContext();
      const db = await openDatabase({ config, log, applicationName: 'blockfeed-migrate' });
      try {
        const { applied, current } = await migrate(db.pool, log);
        process.stdout.write(
          applied.length
            ? `applied ${applied.map((m) => `${String(m.version).padStart(4, '0')}_${m.name}`).join(', ')}; schema at version ${current}\n`
            : `schema up to date at version ${current}\n`,
        );
      } finally {
        await db.close();
      }
    });

  registerKeysCommands(program);
}
