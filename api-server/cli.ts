// The api-server's commands in the blockfeed CLI.
import type { Command } from 'commander';
import { commandContext } from './cli-context.ts';
import { parseIntegerOption } from '../common/cli-support.ts';
import { registerKeysCommands } from './keys/cli.ts';
import { registerMembersCommands } from './members/cli.ts';
import { registerDemoCommands } from './demo/cli.ts';
import { registerExclusionCommands } from './exclusions/cli.ts';
import { registerReclassifyCommands } from './enrich/cli.ts';
import { registerIngestCommands } from './ingest/cli.ts';
import { registerRetentionCommands } from './retention/cli.ts';

export function registerApiServerCommands(program: Command): void {
  registerIngestCommands(program);
  registerDemoCommands(program);
  registerRetentionCommands(program);
  registerReclassifyCommands(program);
  program
    .command('serve')
    .description('run the blocklist HTTP API (embedded PostgreSQL in BLOCKFEED_DATA_DIR unless DATABASE_URL is set)')
    .option('-p, --port <port>', 'listen port (env PORT, default 8080)', parseIntegerOption('--port', 0, 65535))
    .option('--host <address>', 'listen address (env HOST, default 0.0.0.0)')
    .option('--demo-if-empty', 'load demo events first when the store has none (make run)')
    .action(async (opts: { port?: number; host?: string; demoIfEmpty?: boolean }) => {
      // Loaded here, not at the top: the HTTP stack is not needed by (and would weigh on) the other commands.
      const { serve } = await import('./serve.ts');
      await serve(await commandContext({ port: opts.port, host: opts.host }), { demoIfEmpty: opts.demoIfEmpty });
    });

  program
    .command('migrate')
    .description('apply pending database migrations and exit')
    .action(async () => {
      const { config, log } = await commandContext();
      const [{ openCheckedDatabase }, { migrate }] = await Promise.all([import('./store/database.ts'), import('./store/migrate.ts')]);
      const db = await openCheckedDatabase({ config, log, applicationName: 'blockfeed-migrate' });
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
  registerMembersCommands(program);
  registerExclusionCommands(program);
}
