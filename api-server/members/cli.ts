// `blockfeed members list|approve|set-tier|disable`: the operator's side of the member centre. Accounts are
// named by their id or email address. Arguments and stored addresses are echoed through untrusted-text.ts, so
// neither a pasted argument nor a stored address can break a message's line or steer the terminal.
import type { Command } from 'commander';
import { printTable } from '../../common/cli-support.ts';
import { UserError } from '../../common/errors.ts';
import { withStore } from '../cli-context.ts';
import type { Database } from '../store/database.ts';
import { parseTierQuotas, type Quota } from '../keys/tiers.ts';
import { activateMember, disableMember, findMemberByRef, listMembers, setMemberTier, type Member } from './store.ts';
import { hasForbiddenCharacters, quoted, shown } from './untrusted-text.ts';

/** Longer than any id or address (254 characters at most). */
const REF_MAX_LENGTH = 254;

function withMemberStore<T>(fn: (db: Database, tiers: Map<string, Quota>) => Promise<T>): Promise<T> {
  return withStore({ applicationName: 'blockfeed-members', poolSize: 2 }, (db, { config }) => fn(db, parseTierQuotas(config.tierQuotas)));
}

async function memberNamed(db: Database, ref: string): Promise<Member> {
  if (hasForbiddenCharacters(ref) || [...ref].length > REF_MAX_LENGTH) {
    throw new UserError(`<member> must be an account id or email address, without control characters (see blockfeed members list); got ${quoted(ref)}`);
  }
  const member = await findMemberByRef(db.pool, ref);
  if (!member) throw new UserError(`no member with id or email ${quoted(ref)} (see blockfeed members list)`);
  return member;
}

function describe(m: Member): string {
  return `member ${m.id} <${shown(m.email)}>`;
}

export function registerMembersCommands(program: Command): void {
  const members = program.command('members').description('manage the accounts of the member centre website');

  members
    .command('list')
    .description('list accounts: status, tier, active keys')
    .action(async () => {
      await withMemberStore(async (db) => {
        const rows = await listMembers(db.pool);
        const lines = [['ID', 'STATUS', 'TIER', 'KEYS', 'CREATED', 'EMAIL']];
        for (const m of rows) lines.push([String(m.id), m.status, m.tier, String(m.activeKeys), m.createdAt.toISOString(), shown(m.email)]);
        printTable(lines);
      });
    });

  members
    .command('approve')
    .description('activate an account waiting for approval (accounts need it when no SMTP server is configured), or enable a disabled one')
    .argument('<member>', 'id or email address')
    .action(async (ref: string) => {
      await withMemberStore(async (db) => {
        const before = await memberNamed(db, ref);
        if (before.status === 'active') {
          process.stdout.write(`${describe(before)} is already active\n`);
          return;
        }
        await activateMember(db.pool, before.id);
        process.stdout.write(`activated ${describe(before)} (was ${before.status}); it can sign in now\n`);
      });
    });

  members
    .command('set-tier')
    .description('move an account, and every API key it created, to a tier (a subscription); running servers apply it within BLOCKFEED_KEY_CACHE_SECONDS')
    .argument('<member>', 'id or email address')
    .argument('<tier>', 'a tier of BLOCKFEED_TIER_QUOTAS (default tiers: member, basic, pro, enterprise)')
    .action(async (ref: string, tier: string) => {
      await withMemberStore(async (db, tiers) => {
        if (!tiers.has(tier)) throw new UserError(`<tier> must be one of: ${[...tiers.keys()].join(', ')}; got ${quoted(tier)}`);
        const member = await memberNamed(db, ref);
        await setMemberTier(db.pool, member.id, tier);
        process.stdout.write(`${describe(member)}: tier ${member.tier} -> ${tier}\n`);
      });
    });

  members
    .command('disable')
    .description('disable an account: it cannot sign in, its sessions end and its API keys are revoked at once')
    .argument('<member>', 'id or email address')
    .action(async (ref: string) => {
      await withMemberStore(async (db) => {
        const member = await memberNamed(db, ref);
        const { revokedKeys } = await disableMember(db.pool, member.id);
        process.stdout.write(`disabled ${describe(member)}; revoked ${revokedKeys} key${revokedKeys === 1 ? '' : 's'}\n`);
      });
    });
}
