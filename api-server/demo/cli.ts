// `blockfeed demo [--events N] [--days D] [--seed S]`: realistic synthetic events for a first look.
import type { Command } from 'commander';
import { parseIntegerOption } from '../../common/cli-support.ts';
import { withStore } from '../cli-context.ts';
import { DEMO_DEFAULTS } from './defaults.ts';

export function registerDemoCommands(program: Command): void {
  program
    .command('demo')
    .description('load realistic synthetic attack events (seeded, reproducible) ending now')
    .option('-n, --events <n>', 'number of events', parseIntegerOption('--events', 1, 50_000_000), DEMO_DEFAULTS.events)
    .option('-d, --days <d>', 'days of history, up to the 30 kept', parseIntegerOption('--days', 1, 30), DEMO_DEFAULTS.days)
    .option('-s, --seed <s>', 'random seed', parseIntegerOption('--seed', 0, 2 ** 31 - 1), DEMO_DEFAULTS.seed)
    .action(async (opts: { events: number; days: number; seed: number }) => {
      await withStore({ applicationName: 'blockfeed-demo', poolSize: 2 }, async (db, { log }) => {
        const { loadDemo } = await import('./demo.ts');
        const { events, inserted } = await loadDemo(db.pool, log, opts);
        process.stdout.write(`loaded ${inserted} demo events (${events} generated over ${opts.days} days, seed ${opts.seed})\n`);
      });
    });
}
