// From a real attack to a refused connection, on a real node (test/support/attack-loop.ts): hosts of the internet
// brute-force the chart's Cowrie with hydra through its NodePort; Cowrie logs them with their own addresses, its
// shipper pushes the lines to the api-server, the live subscription's long poll hears of them, the controller
// writes the protected namespace's NetworkPolicy and kube-router enforces it: each attacker's next connection to
// the workload's NodePort is refused, a host that never attacked is still served, and Cowrie stays open to the
// attackers it reported. Printed per attacker: the time from its first failed login (Cowrie's log) to its first
// refused connection, and their median; the stages of that time are `make bench-attack-to-block`'s to print.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { median } from '../../bench/harness.ts';
import { attack, connectFromSensor, cowrieEvents, firstFailedLogin, startAttackLoop, SYSTEM, COWRIE_SSH_NODE_PORT, type Attack, type AttackLoop } from '../support/attack-loop.ts';
import { NODE } from '../support/node.ts';

const ATTACKERS = ['192.0.2.41', '198.51.100.42', '203.0.113.43'];
/** A host that never attacks. */
const BYSTANDER = '198.51.100.99';

const report = (line: string) => console.log(`[attack-to-block] ${line}`);
const clock = (ms: number) => new Date(ms).toISOString().slice(11, 23);

describe('from a real attack on Cowrie to a refused connection at a protected workload', () => {
  let loop: AttackLoop;
  const attacks: Attack[] = [];

  beforeAll(async () => {
    loop = await startAttackLoop([...ATTACKERS, BYSTANDER], report);
  });

  afterAll(async () => {
    await loop?.stop();
  });

  it('serves every host through the NodePort before anyone attacks', async () => {
    for (const [address, client] of loop.clients) {
      const r = await client.request(loop.webUrl);
      report(`before the attacks: ${address.padEnd(15)} ${loop.webUrl} ${r.outcome} (${r.detail})`);
      expect(r.outcome, address).toBe('answered');
    }
  });

  it("refuses each attacker's next connection to the workload once it has attacked Cowrie, and serves a host that never attacked", async () => {
    for (const address of ATTACKERS) attacks.push(await attack(loop, address));
    const events = cowrieEvents(loop);
    const elapsed: number[] = [];
    for (const a of attacks) {
      const failed = firstFailedLogin(events, a.attacker);
      expect(failed, `a failed login from ${a.attacker} in Cowrie's log`).toBeDefined();
      const failedMs = Date.parse(failed!.timestamp);
      elapsed.push(a.refusedAtMs - failedMs);
      report(
        `${a.attacker.padEnd(15)} hydra started ${clock(a.hydraStartMs)}, first failed login ${clock(failedMs)} (Cowrie's log), first refused connection ${clock(a.refusedAtMs)}: ` +
          `${((a.refusedAtMs - failedMs) / 1000).toFixed(2)} s after the failed login (${((a.refusedAtMs - a.hydraStartMs) / 1000).toFixed(2)} s after hydra started; ${a.answeredProbes} requests answered before` +
          `${a.otherProbes.length ? `, ${a.otherProbes.length} neither answered nor refused (${a.otherProbes[0]})` : ''})`,
      );
    }
    report(`median from the first failed login to the first refused connection: ${(median(elapsed) / 1000).toFixed(2)} s over ${elapsed.length} attackers (target: 10 s)`);

    for (const address of ATTACKERS) expect((await loop.clients.get(address)!.request(loop.webUrl)).outcome, address).toBe('refused');
    const bystander = await loop.clients.get(BYSTANDER)!.request(loop.webUrl);
    report(`after the attacks: ${BYSTANDER}, which never attacked, ${bystander.outcome} (${bystander.detail})`);
    expect(bystander.outcome).toBe('answered');
  });

  it("logs the attackers' own addresses in Cowrie, never the node's (externalTrafficPolicy: Local)", () => {
    const sources = new Set(cowrieEvents(loop).map((e) => e.src_ip).filter((s) => s !== undefined));
    report(`source addresses in Cowrie's log: ${[...sources].join(', ')}`);
    expect([...sources].sort()).toEqual([...ATTACKERS].sort());
    expect(sources.has(NODE.address)).toBe(false);
  });

  it('keeps Cowrie open to the attackers it reported; its pod reaches the api-server and nothing else', async () => {
    for (const address of ATTACKERS) {
      // Cowrie's SSH banner, read by a plain TCP connection through the NodePort (nc ends when its input does:
      // a second of it).
      const banner = await loop.clients.get(address)!.ns.run('sh', ['-c', 'sleep 1 | busybox nc -w 2 "$0" "$1"', NODE.address, String(COWRIE_SSH_NODE_PORT)]);
      expect(banner, address).toMatch(/^SSH-2\.0-/);
    }
    const api = (await loop.core.listNamespacedPod({ namespace: SYSTEM, labelSelector: 'app.kubernetes.io/component=api-server' })).items[0];
    const toApi = await connectFromSensor(loop, api?.status?.podIP ?? '', 8080);
    const toWorkload = await connectFromSensor(loop, loop.webPodIp, 8080);
    report(`from Cowrie's pod (its NetworkPolicy): the api-server's pod ${toApi}, the workload's pod ${toWorkload}`);
    expect(toApi).toBe('connected');
    expect(toWorkload).not.toBe('connected');
  });
});
