// The one blockfeed CLI (started by bin/cli.ts). Each program contributes its commands; this file only
// composes them and turns failures into one clear line and an exit status.
import { readFileSync } from 'node:fs';
import { Command, CommanderError } from 'commander';
import { registerApiServerCommands } from '../api-server/cli.ts';
import { registerControllerCommands } from '../controller/cli.ts';
import { registerShipperCommands } from '../shipper/cli.ts';
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
  registerShipperCommands(program);
  return program;
}

/**
 * Where a command has subcommands, the first operand after it names one of them, or the program refuses it
 * whatever flags follow: commander itself answers `blockfeed forward --help` (or `keys bogus --help`) with the
 * parent's help and exit status 0, as though the command existed.
 */
function refuseUnknownCommand(program: Command, argv: string[]): void {
  let command = program;
  const operands = argv.slice(2).filter((arg) => !arg.startsWith('-'));
  for (const operand of operands) {
    if (command.commands.length === 0 || operand === 'help') return;
    const sub = command.commands.find((c) => c.name() === operand || c.aliases().includes(operand));
    // commander's own message and exit status for an unknown command, with its "Did you mean" suggestion
    if (!sub) command.parse([operand], { from: 'user' });
    else command = sub;
  }
}

export async function main(argv: string[]): Promise<number> {
  try {
    const program = buildProgram();
    refuseUnknownCommand(program, argv);
    await program.parseAsync(argv);
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
