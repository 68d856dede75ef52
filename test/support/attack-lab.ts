// A network of its own where real attack tools meet real honeypots: a sensor namespace whose bridge holds the
// sensor's address, and attacker namespaces on that bridge, each a host with one documentation address
// (ingest drops loopback and private sources, so an attacker must look global to be stored). Every packet
// stays in these namespaces; they die with the test runner (namespaces.ts).
import { holdNamespaces, type Namespaces } from './namespaces.ts';

export interface Lab {
  /** The sensor's namespace: the honeypots run here (its unprivileged ports start at 0, so 21 and 22 are theirs). */
  readonly sensor: Namespaces;
  /** The sensor's address, on the bridge. */
  readonly address: string;
  /** A new attacker host with source address `address` (a /32), one hop from the sensor. */
  attacker(address: string): Promise<Namespaces>;
  stop(): Promise<void>;
}

const BRIDGE = 'lab0';

/**
 * Starts the lab. No router: each attacker reaches the sensor's address on its link and the sensor routes each
 * attacker's /32 to the bridge, so addresses from any range (192.0.2.0/24, 198.51.100.0/24, 203.0.113.0/24)
 * share one segment and the honeypots log them as they are.
 */
export async function startLab(address = '192.0.2.1'): Promise<Lab> {
  const sensor = await holdNamespaces();
  const attackers: Namespaces[] = [];
  const stop = async () => {
    await Promise.all(attackers.map((a) => a.stop()));
    await sensor.stop();
  };
  try {
    const ip = (...args: string[]) => sensor.run('ip', args);
    await ip('link', 'set', 'lo', 'up');
    await ip('link', 'add', BRIDGE, 'type', 'bridge');
    await ip('addr', 'add', `${address}/32`, 'dev', BRIDGE);
    await ip('link', 'set', BRIDGE, 'up');
    // Honeypots listen on the services' own ports (FTP 21, SSH 22) as an unprivileged user.
    await sensor.run('sh', ['-c', 'echo 0 > /proc/sys/net/ipv4/ip_unprivileged_port_start']);
  } catch (err) {
    await stop();
    throw err;
  }

  return {
    sensor,
    address,
    stop,
    attacker: async (source) => {
      const ns = await holdNamespaces();
      attackers.push(ns);
      const link = `att${attackers.length}`;
      const ip = (...args: string[]) => ns.run('ip', args);
      await ip('link', 'add', 'eth0', 'type', 'veth', 'peer', 'name', link, 'netns', String(sensor.pid));
      await sensor.run('ip', ['link', 'set', link, 'master', BRIDGE, 'up']);
      await ip('link', 'set', 'lo', 'up');
      await ip('addr', 'add', `${source}/32`, 'dev', 'eth0');
      await ip('link', 'set', 'eth0', 'up');
      await ip('route', 'add', `${address}/32`, 'dev', 'eth0', 'src', source);
      await sensor.run('ip', ['route', 'add', `${source}/32`, 'dev', BRIDGE]);
      return ns;
    },
  };
}
