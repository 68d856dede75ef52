// Attack events built in code for the ingest tests: a root SSH login attempt on a honeypot, with any field
// overridden. The id is derived from the content, as the ingest derives it.
import { parseAddress } from '../../common/ip.ts';
import { withId, type AttackEvent } from '../../api-server/ingest/event.ts';

export function sshLogin(over: Partial<Omit<AttackEvent, 'id' | 'src'>> & { src?: string } = {}): AttackEvent {
  const { src = '222.85.85.85', ...fields } = over;
  return withId({
    ts: Date.UTC(2026, 10, 20, 13),
    src: parseAddress(src) as AttackEvent['src'],
    dstPort: 22,
    service: 'ssh',
    proto: 'tcp',
    source: 'honeypot',
    sensor: 'hp-1',
    action: 1,
    username: 'root',
    command: null,
    ...fields,
  });
}
