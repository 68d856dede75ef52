// `blockfeed ship` across restarts, with `blockfeed serve` on an embedded PostgreSQL of its own (a data
// directory, as on a sensor's central server): the api-server stopped mid-stream and started again on the
// same data, the shipper killed with SIGKILL mid-stream and started again, and 50 MB written while the
// api-server is away. Nothing may be lost (every line an event), nothing stored twice (the events and the
// hourly rollups count each line once), and while the server is away the shipper neither buffers the file
// nor moves its position past what the server acknowledged.
import { readFileSync } from 'node:fs';
import { rm, stat, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort, tempDataDir } from '../../support/cli.ts';
import {
  append, eventLines, eventually, rssMb, shipArgs, startPushServer, statePosition, stored, ShipperRuns, type PushServer, type Shipper,
} from '../../support/shipper.ts';

const BASE = Date.now() - 3_600_000;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('blockfeed ship across restarts', () => {
  let dataDir: string;
  let port: number;
  let server: PushServer | undefined;
  const runs = new ShipperRuns();

  /** The store's URL, from the embedded server's credentials (while serve runs it). */
  const storeUrl = () => {
    const { port: pgPort, user, password } = JSON.parse(readFileSync(path.join(dataDir, 'embedded.json'), 'utf8')) as { port: number; user: string; password: string };
    return `postgres://${encodeURIComponent(user)}:${encodeURIComponent(password)}@127.0.0.1:${pgPort}/blockfeed`;
  };
  const startServer = async () => {
    server = await startPushServer({ BLOCKFEED_DATA_DIR: dataDir }, port);
    return server;
  };

  beforeAll(async () => {
    dataDir = await tempDataDir();
    port = await freePort();
    await startServer();
  });
  afterAll(async () => {
    await runs.stopAll();
    await server?.stop();
    await runs.removeDirs();
    await rm(path.dirname(dataDir), { recursive: true, force: true });
  });

  const workDir = () => runs.workDir();
  const ship = (args: string[], dir: string) => runs.ship(args, dir);

  const shipped = (s: Shipper) => s.records().filter((r) => r.msg === 'batch shipped');
  const sum = (records: Record<string, unknown>[], key: string) => records.reduce((n, r) => n + (r[key] as number), 0);

  /** Appends lines [from, to) in slices of `slice` lines, `pauseMs` apart, as a sensor writes. */
  async function write(log: string, net: number, sensor: string, from: number, to: number, slice = 200, pauseMs = 20): Promise<void> {
    for (let i = from; i < to; i += slice) {
      await append(log, eventLines(net, i, Math.min(to, i + slice), sensor, BASE));
      await sleep(pauseMs);
    }
  }

  async function expectAllStored(sensor: string, net: number, lines: number, procs: Shipper[]): Promise<void> {
    const procsToWatch = [...(server ? [server.proc] : []), ...procs.map((s) => s.proc)];
    await eventually(`${lines} events of ${sensor}`, procsToWatch, async () => (await stored(storeUrl(), sensor, net)).events >= lines, 60_000);
    expect(await stored(storeUrl(), sensor, net)).toEqual({ events: lines, attacks: lines });
  }

  it('loses nothing and stores nothing twice when the api-server stops mid-stream and comes back', async () => {
    const dir = await workDir();
    const log = path.join(dir, 'events.log');
    const [sensor, net, total] = ['hp-server-restart', 10, 20_000];
    await writeFile(log, '');
    const shipper = ship(shipArgs([log], server!, dir), dir);
    await write(log, net, sensor, 0, 8000);
    await server!.stop();
    server = undefined;
    // The sensor goes on writing while the api-server is away; the shipper retries the batch it holds.
    await write(log, net, sensor, 8000, 14_000);
    await eventually('a failed push', [shipper.proc], async () => shipper.records().some((r) => r.msg.startsWith('push failed')));
    await startServer();
    await write(log, net, sensor, 14_000, total);
    await expectAllStored(sensor, net, total, [shipper]);
    await eventually('the whole file acknowledged', [shipper.proc], async () => (await statePosition(dir, log))?.line === total);
    const batches = shipped(shipper);
    // Every line reached the server once, save the batch in flight when the server stopped (sent again whole).
    expect(sum(batches, 'lines') - total).toBeLessThanOrEqual(Math.max(...batches.map((b) => b.lines as number)));
    expect(sum(batches, 'inserted')).toBe(total);
    const failures = shipper.records().filter((r) => r.msg.startsWith('push failed'));
    console.log(`api-server restart: ${total} lines, ${batches.length} batches, ${failures.length} failed pushes retried, ${sum(batches, 'duplicates')} lines sent twice (stored once)`);
  });

  it('loses nothing and stores nothing twice when the shipper is killed mid-stream and started again', async () => {
    const dir = await workDir();
    const log = path.join(dir, 'events.log');
    const [sensor, net, total] = ['hp-shipper-kill', 11, 20_000];
    await writeFile(log, '');
    const first = ship(shipArgs([log], server!, dir), dir);
    await write(log, net, sensor, 0, 6000);
    first.proc.child.kill('SIGKILL');
    await first.exited;
    await write(log, net, sensor, 6000, 12_000);
    const second = ship(shipArgs([log], server!, dir), dir);
    await write(log, net, sensor, 12_000, 16_000);
    second.proc.child.kill('SIGKILL');
    await second.exited;
    await write(log, net, sensor, 16_000, total);
    const third = ship(shipArgs([log], server!, dir), dir);
    await expectAllStored(sensor, net, total, [third]);
    await eventually('the whole file acknowledged', [third.proc], async () => (await statePosition(dir, log))?.line === total);
    const batches = [first, second, third].flatMap(shipped);
    // Each start went on where the one before had been acknowledged, so at most the batch each kill
    // interrupted was sent again. (A killed process loses its last log lines: the logs undercount.)
    const biggest = Math.max(...batches.map((b) => b.lines as number));
    expect(sum(batches, 'lines') - total).toBeLessThanOrEqual(2 * biggest);
    for (const s of [second, third]) expect(s.records().map((r) => r.msg)).toContainEqual(expect.stringMatching(/: going on after line [1-9]\d*$/));
    console.log(`shipper SIGKILL ×2: ${total} lines, ${batches.length} batches, ${sum(batches, 'duplicates')} lines sent twice (stored once)`);
  });

  it('holds one batch, not the file, while the api-server is away: its memory stays flat and its position stays put', async () => {
    const dir = await workDir();
    const log = path.join(dir, 'events.log');
    const [sensor, net] = ['hp-backlog', 12];
    const metricsPort = await freePort();
    await writeFile(log, eventLines(net, 0, 1000, sensor, BASE));
    const shipper = ship(shipArgs([log], server!, dir, ['--metrics-bind-address', `127.0.0.1:${metricsPort}`]), dir);
    await expectAllStored(sensor, net, 1000, [shipper]);
    await eventually('position saved', [shipper.proc], async () => (await statePosition(dir, log))?.line === 1000);
    const pid = shipper.proc.child.pid!;
    const before = await statePosition(dir, log);
    await server!.stop();
    server = undefined;

    // ~50 MB of lines (about 400,000) while the server is away, the shipper's memory sampled as they are written.
    const samples: number[] = [rssMb(pid)];
    let lines = 1000;
    const chunk = 10_000;
    while ((await stat(log)).size < 50 * 1024 * 1024) {
      await append(log, eventLines(net, lines, lines + chunk, sensor, BASE));
      lines += chunk;
      samples.push(rssMb(pid));
    }
    await sleep(3000);
    samples.push(rssMb(pid));
    const size = (await stat(log)).size;
    // The position never ran ahead of what the server acknowledged.
    expect(await statePosition(dir, log)).toEqual(before);
    const metrics = await (await fetch(`http://127.0.0.1:${metricsPort}/metrics`)).text();
    expect(metrics).toContain(`blockfeed_ship_lag_bytes{file="${log}",program="shipper"} ${size - before!.offset}`);
    expect(metrics).toMatch(/^blockfeed_ship_batches_failed_total\{reason="unreachable",program="shipper"\} [1-9]/m);
    // Bounded: reading on would have grown it by the 50 MB of the file; it holds one batch (8 MiB at most).
    const peak = Math.max(...samples);
    expect(peak).toBeLessThan(samples[0]! + 32);

    const back = new Date().toISOString();
    await startServer();
    await expectAllStored(sensor, net, lines, [shipper]);
    await eventually('the whole file acknowledged', [shipper.proc], async () => (await statePosition(dir, log))?.line === lines);
    // The backlog's pace, from the first push the server answered after its restart to the last.
    const after = shipped(shipper).filter((r) => (r.time as string) > back);
    const span = (Date.parse(after.at(-1)!.time as string) - Date.parse(after[0]!.time as string) + (after[0]!.ms as number)) / 1000;
    console.log(
      `backlog: ${(size / 1024 / 1024).toFixed(0)} MB (${lines - 1000} lines) written while the api-server was away; shipper RSS ${samples[0]!.toFixed(0)} MB before,` +
        ` ${peak.toFixed(0)} MB at most; then ${sum(after, 'lines')} lines in ${after.length} batches in ${span.toFixed(1)} s, ${(sum(after, 'lines') / span).toFixed(0)} lines/s`,
    );
  }, 300_000);
});
