// What both readers of a Cowrie line share: what each eventid means, and the sessions seen so far. Only a
// session's connect line carries the destination port, so the readers remember each session's port and
// protocol for the lines that follow it.
import type { Action } from '../../../classify/classification.ts';

/** What a kept eventid is; every other eventid (client.version, kex, ...) is housekeeping. */
export type EventKind = 'connect' | 'login' | 'command' | 'download' | 'upload' | 'forward';

export const EVENTIDS: ReadonlyMap<string, { action: Action; kind: EventKind }> = new Map([
  ['cowrie.session.connect', { action: 0, kind: 'connect' }],
  ['cowrie.login.failed', { action: 1, kind: 'login' }],
  ['cowrie.login.success', { action: 1, kind: 'login' }],
  ['cowrie.command.input', { action: 2, kind: 'command' }],
  ['cowrie.command.failed', { action: 2, kind: 'command' }],
  ['cowrie.session.file_download', { action: 2, kind: 'download' }],
  ['cowrie.session.file_download.failed', { action: 2, kind: 'download' }],
  ['cowrie.session.file_upload', { action: 2, kind: 'upload' }],
  ['cowrie.direct-tcpip.request', { action: 2, kind: 'forward' }],
]);

/** Ends a session: it is forgotten. */
export const SESSION_CLOSED = 'cowrie.session.closed';

/**
 * What a session's connect line said, packed in one small integer — (port + 1) * 2 + (telnet ? 1 : 0), port
 * -1 when none — so that the many sessions a long log holds are no objects for the collector to trace.
 */
export type Session = number;
export const packSession = (port: number | null, telnet: boolean): Session => ((port ?? -1) + 1) * 2 + (telnet ? 1 : 0);
export const sessionPort = (s: Session): number | null => (s >> 1 === 0 ? null : (s >> 1) - 1);
export const sessionTelnet = (s: Session): boolean => (s & 1) === 1;

const MAX_SESSIONS = 100_000;

/**
 * A session id as remembered: Cowrie's own (12 hex digits) as a number, any other as its text. ~100,000 kept
 * strings would be promoted and traced by every full collection (~0.5 s of a million-line ingest).
 */
export type SessionKey = number | string;
const COWRIE_ID = /^[0-9a-f]{12}$/;
export const sessionKey = (id: string): SessionKey => (COWRIE_ID.test(id) ? parseInt(id, 16) : id);

/** sessionKey() of the ASCII id line[from, to), making no string of Cowrie's own ids. */
export function sessionKeyOfBytes(line: Buffer, from: number, to: number): SessionKey {
  let key = to - from === 12 ? 0 : -1;
  for (let i = from; i < to && key >= 0; i++) {
    const c = line[i] as number;
    const digit = c >= 48 && c <= 57 ? c - 48 : c >= 97 && c <= 102 ? c - 87 : -1;
    key = digit < 0 ? -1 : key * 16 + digit;
  }
  return key >= 0 ? key : line.toString('latin1', from, to);
}

/**
 * The sessions seen lately, bounded without per-line cost: two generations of at most MAX_SESSIONS / 2 each;
 * when the young one fills, the old one is dropped whole.
 */
export class RecentSessions {
  private young = new Map<SessionKey, Session>();
  private old = new Map<SessionKey, Session>();

  get(id: SessionKey): Session | undefined {
    return this.young.get(id) ?? this.old.get(id);
  }

  set(id: SessionKey, session: Session): void {
    if (this.young.size >= MAX_SESSIONS / 2) {
      this.old = this.young;
      this.young = new Map();
    }
    this.young.set(id, session);
  }

  delete(id: SessionKey): void {
    this.young.delete(id);
    this.old.delete(id);
  }
}
