// The one blockfeed CLI (started by bin/cli.ts). Each program contributes its commands; this file only
// composes them and turns failures into one clear line and an exit status.
import { readFileSync } from 'node:fs';
import { Command, CommanderError } from 'commander';
import { registerApiServerCommands } from '../api-server/cli.ts';
import { registerControllerCommands } from '../controller/cli.ts';
import { UserError } from '../common/errors.ts';

const pkg = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as { version: string; description: string };

function buildProgram(): Command {
  const program = new Command('blockfeed')
    .description(pkg.description)
    .version(pkg.version, '-V, --version')
    .showHelpAfterError('(run with --help for usage)')
    .exitOverride();
  registerApiServerCommands(program);
  registerControllerCommands(program);
  return program;
}

export async function main(argv: string[]): Promise<number> {
  try {
    await buildProgram().parseAsync(argv);
    return process.exitCode === undefined ? 0 : Number(process.exitCode);
  } catch (err) {
    if (err instanceof CommanderError) return err.exitCode;
    if (err instanceof UserError) {
      process.stderr.write(`blockfeed: ${err.message}\n`);
      return err.exitCode;
    }
    process.stderr.write(`blockfeed: unexpected error: ${(err as Error).stack ?? String(err)}\n`);
    return 1;
  }
}
