// What the commands of both programs share: an orderly stop on SIGTERM/SIGINT, integer options, tables.
import { InvalidArgumentError } from 'commander';
import type { Logger } from './logging.ts';

/**
 * Resolves on the first SIGTERM or SIGINT. A second signal while shutting down exits at once (the operator
 * insists). Returns a function that removes the handlers.
 */
export function untilSignal(log: Logger): { signalled: Promise<NodeJS.Signals>; dispose: () => void } {
  let resolve!: (s: NodeJS.Signals) => void;
  const signalled = new Promise<NodeJS.Signals>((r) => (resolve = r));
  let count = 0;
  const handler = (signal: NodeJS.Signals) => {
    count++;
    if (count > 1) {
      log.warn({ signal }, 'second signal: exiting now');
      process.exit(130);
    }
    log.info({ signal }, 'shutting down');
    resolve(signal);
  };
  process.on('SIGTERM', handler);
  process.on('SIGINT', handler);
  return {
    signalled,
    dispose: () => {
      process.off('SIGTERM', handler);
      process.off('SIGINT', handler);
    },
  };
}

export function parseIntegerOption(name: string, min: number, max: number): (value: string) => number {
  return (value: string) => {
    const n = Number(value);
    if (!/^-?\d+$/.test(value.trim()) || n < min || n > max) {
      throw new InvalidArgumentError(`${name} must be an integer from ${min} to ${max}, got "${value}"`);
    }
    return n;
  };
}

/** Writes rows as aligned columns (the last one unpadded) to stdout: the first row is the header. */
export function printTable(rows: string[][]): void {
  const widths = rows[0]?.map((_, i) => Math.max(...rows.map((r) => (r[i] ?? '').length))) ?? [];
  process.stdout.write(rows.map((r) => r.map((c, i) => (i === r.length - 1 ? c : c.padEnd(widths[i] ?? 0))).join('  ')).join('\n') + '\n');
}
