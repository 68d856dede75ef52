// `blockfeed removals list|approve|reject` and `blockfeed exclusions add|list|remove`: the operator decides
// what the lists leave out (docs/data-model.md "Exclusions"). Requests hold what an anonymous visitor typed,
// so whatever the commands echo (an argument, a stored email or reason) goes through untrusted-text.ts: nothing
// can break a line or steer the terminal. Each mistake is one line naming the argument.
import { userInfo } from 'node:os';
import type { Command } from 'commander';
import { parseIntegerOption, printTable } from '../../common/cli-support.ts';
import { UserError } from '../../common/errors.ts';
import { withStore } from '../cli-context.ts';
import { hasForbiddenCharacters, quoted, shown } from '../members/untrusted-text.ts';
import type { Database } from '../store/database.ts';
import { parseAddressOrNetwork } from '../store/networks.ts';
import {
  REMOVAL_STATUSES,
  addExclusion,
  addressesWithin,
  approveRemoval,
  listExclusions,
  listRemovalRequests,
  rejectRemoval,
  removeExclusions,
  type DecisionOutcome,
  type Exclusion,
  type RemovalStatus,
} from './store.ts';

/** A reason or note: one line of at most this many characters. */
const TEXT_MAX_LENGTH = 500;

function withExclusionStore<T>(fn: (db: Database) => Promise<T>): Promise<T> {
  return withStore({ applicationName: 'blockfeed-exclusions', poolSize: 2 }, (db) => fn(db));
}

/** Who runs the command, as the records keep it (decided_by, created_by). */
function operator(): string {
  try {
    return userInfo().username || 'operator';
  } catch {
    return 'operator';
  }
}

/** A network argument: an address (as its /32 or /128) or a CIDR without host bits; IPv4-mapped IPv6 is IPv4. */
function networkArgument(name: string, text: string): string {
  const parsed = parseAddressOrNetwork(text.trim());
  if (!parsed.ok) throw new UserError(`${name} must be an IPv4 or IPv6 address or network such as 203.0.113.0/24; ${quoted(text)} ${parsed.problem}`);
  return parsed.network.cidr;
}

function textOption(name: string, text: string): string {
  const trimmed = text.trim();
  if (!trimmed || hasForbiddenCharacters(trimmed) || [...trimmed].length > TEXT_MAX_LENGTH) {
    throw new UserError(`${name} must be one line of 1 to ${TEXT_MAX_LENGTH} characters without control characters; got ${quoted(text)}`);
  }
  return trimmed;
}

/** `--until`: a day (midnight UTC) or an instant with its zone, in the future. */
function untilOption(text: string, now = new Date()): Date {
  const form = /^\d{4}-\d{2}-\d{2}$/.test(text) ? `${text}T00:00:00Z` : /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d{1,3})?)?(Z|[+-]\d{2}:\d{2})$/.test(text) ? text : undefined;
  const at = form === undefined ? Number.NaN : Date.parse(form);
  if (Number.isNaN(at)) throw new UserError(`--until must be a day (2026-12-31) or an instant with its zone (2026-12-31T18:00:00Z); got ${quoted(text)}`);
  if (at <= now.getTime()) throw new UserError(`--until must lie in the future; got ${quoted(text)}`);
  return new Date(at);
}

const iso = (at: Date | null): string => (at ? at.toISOString().replace(/\.\d{3}Z$/, 'Z') : '-');

function describeExclusion(e: Exclusion): string {
  return `exclusion ${e.id} (${e.network}${e.until ? `, until ${iso(e.until)}` : ''})`;
}

function state(e: Exclusion, now: Date): string {
  if (e.removedAt) return 'removed';
  return e.until && e.until <= now ? 'expired' : 'active';
}

function decisionError(id: number, outcome: DecisionOutcome): UserError | undefined {
  if (outcome.kind === 'not-found') return new UserError(`no removal request ${id} (see blockfeed removals list --status all)`);
  if (outcome.kind === 'decided') {
    const r = outcome.request;
    return new UserError(`removal request ${id} was ${r.status} already, on ${iso(r.decidedAt)} by ${shown(r.decidedBy ?? '-')}`);
  }
  return undefined;
}

const requestId = parseIntegerOption('<id>', 1, 2_147_483_647);

export function registerExclusionCommands(program: Command): void {
  const removals = program.command('removals').description('the removal requests made on the website\'s check page: nothing is removed until you approve one');

  removals
    .command('list')
    .description('list removal requests, oldest first')
    .option('--status <status>', `${REMOVAL_STATUSES.join(', ')} or all`, 'pending')
    .action(async (opts: { status: string }) => {
      if (opts.status !== 'all' && !(REMOVAL_STATUSES as readonly string[]).includes(opts.status)) {
        throw new UserError(`--status must be one of: ${[...REMOVAL_STATUSES, 'all'].join(', ')}; got ${quoted(opts.status)}`);
      }
      await withExclusionStore(async (db) => {
        const rows = await listRemovalRequests(db.pool, opts.status === 'all' ? undefined : (opts.status as RemovalStatus));
        const lines = [['ID', 'STATUS', 'CREATED', 'NETWORK', 'FROM', 'EMAIL', 'DECIDED', 'REASON']];
        for (const r of rows) {
          lines.push([String(r.id), r.status, iso(r.createdAt), r.network, shown(r.clientNetwork), shown(r.email), r.decidedAt ? `${iso(r.decidedAt)} ${shown(r.decidedBy ?? '')}` : '-', shown(r.reason)]);
        }
        printTable(lines);
      });
    });

  removals
    .command('approve')
    .description('approve a pending request: its address or network becomes an exclusion, left out of every list at once')
    .argument('<id>', 'the request\'s id (blockfeed removals list)', requestId)
    .option('--note <text>', 'why, kept with the decision and as the exclusion\'s reason (default: "removal request <id>")')
    .option('--until <date>', 'end the exclusion then (a day such as 2026-12-31, or an instant with its zone); default: until removed')
    .action(async (id: number, opts: { note?: string; until?: string }) => {
      const note = opts.note === undefined ? undefined : textOption('--note', opts.note);
      const until = opts.until === undefined ? undefined : untilOption(opts.until);
      await withExclusionStore(async (db) => {
        const outcome = await approveRemoval(db.pool, { id, decidedBy: operator(), note, until });
        const error = decisionError(id, outcome);
        if (error) throw error;
        if (outcome.kind !== 'approved') return;
        const covered = await addressesWithin(db.pool, outcome.exclusion.network);
        process.stdout.write(
          `approved removal request ${id}: ${outcome.exclusion.network} is left out of every list (${describeExclusion(outcome.exclusion)}); ` +
            `it covers ${covered} address${covered === 1 ? '' : 'es'} the sensors have seen\n`,
        );
      });
    });

  removals
    .command('reject')
    .description('reject a pending request; nothing changes in the lists')
    .argument('<id>', 'the request\'s id (blockfeed removals list)', requestId)
    .option('--note <text>', 'why, kept with the decision')
    .action(async (id: number, opts: { note?: string }) => {
      const note = opts.note === undefined ? undefined : textOption('--note', opts.note);
      await withExclusionStore(async (db) => {
        const outcome = await rejectRemoval(db.pool, { id, decidedBy: operator(), note });
        const error = decisionError(id, outcome);
        if (error) throw error;
        if (outcome.kind === 'rejected') process.stdout.write(`rejected removal request ${id} (${outcome.request.network})\n`);
      });
    });

  const exclusions = program.command('exclusions').description('addresses and networks left out of every list, export, scan list and check (their events are still stored and counted)');

  exclusions
    .command('add')
    .description('leave an address or network out of every list from now on, whatever it does')
    .argument('<network>', 'an IPv4 or IPv6 address or network (CIDR without host bits), such as 203.0.113.0/24')
    .requiredOption('--reason <text>', 'why (shown to operators only)')
    .option('--until <date>', 'end it then (a day such as 2026-12-31, or an instant with its zone); default: until removed')
    .action(async (text: string, opts: { reason: string; until?: string }) => {
      const network = networkArgument('<network>', text);
      const reason = textOption('--reason', opts.reason);
      const until = opts.until === undefined ? undefined : untilOption(opts.until);
      await withExclusionStore(async (db) => {
        const outcome = await addExclusion(db.pool, { network, reason, createdBy: operator(), until });
        if ('existing' in outcome) throw new UserError(`${network} is excluded already: ${describeExclusion(outcome.existing)} (blockfeed exclusions remove ${outcome.existing.id} first to change it)`);
        const covered = await addressesWithin(db.pool, network);
        process.stdout.write(`added ${describeExclusion(outcome.added)}: left out of every list from now on; it covers ${covered} address${covered === 1 ? '' : 'es'} the sensors have seen\n`);
      });
    });

  exclusions
    .command('list')
    .description('list the exclusions in force (with --all, also those removed or expired)')
    .option('--all', 'every exclusion ever made')
    .action(async (opts: { all?: boolean }) => {
      await withExclusionStore(async (db) => {
        const now = new Date();
        const rows = await listExclusions(db.pool, { all: opts.all === true });
        const lines = [['ID', 'STATE', 'NETWORK', 'SINCE', 'UNTIL', 'SOURCE', 'BY', 'REASON']];
        for (const e of rows) {
          const source = e.removalRequestId === null ? 'operator' : `request ${e.removalRequestId}`;
          lines.push([String(e.id), state(e, now), e.network, iso(e.createdAt), iso(e.removedAt ?? e.until), source, shown(e.createdBy), shown(e.reason)]);
        }
        printTable(lines);
      });
    });

  exclusions
    .command('remove')
    .description('end an exclusion (kept on record): the lists hold its addresses again when they are seen in a window')
    .argument('<exclusion>', 'its id (blockfeed exclusions list), or its network exactly as added')
    .action(async (target: string) => {
      const named = /^[1-9][0-9]{0,9}$/.test(target) ? { id: Number(target) } : { network: networkArgument('<exclusion>', target) };
      await withExclusionStore(async (db) => {
        const removed = await removeExclusions(db.pool, named, operator());
        if (!removed.length) throw new UserError(`no exclusion in force is ${'id' in named ? `numbered ${named.id}` : named.network} (see blockfeed exclusions list)`);
        for (const e of removed) process.stdout.write(`removed ${describeExclusion(e)}\n`);
      });
    });
}
