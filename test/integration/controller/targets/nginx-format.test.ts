// The `nginx` ConfigMap format in a real nginx (Debian): a listed source address is refused, an unlisted one
// served. Loopback addresses go straight to the formatter, since the safety stage rightly drops them from feeds.
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { chmod, mkdtemp, mkdir, rm, writeFile } from 'node:fs/promises';
import { request } from 'node:http';
import { freePort } from '../../../support/cli.ts';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { aggregate, cidrStrings, parseEntry } from '../../../../controller/cidr.ts';
import { render } from '../../../../controller/targets/firewall-files.ts';

let prefix: string;
let nginx: ChildProcess;
// Debian installs nginx in /usr/sbin, which a minimal PATH (CI's clean environment) may leave out.
const NGINX = spawnSync('nginx', ['-v']).error === undefined ? 'nginx' : '/usr/sbin/nginx';
let port: number;

function get(from: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port, path: '/', localAddress: from, agent: false }, (res) => {
      res.resume();
      resolve(res.statusCode!);
    });
    req.on('error', reject);
    req.end();
  });
}

const listed = ['127.0.0.5', '127.0.0.8', '127.0.0.9', '127.0.0.10', '127.0.0.11', '2001:db8::7'];

beforeAll(async () => {
  prefix = await mkdtemp(path.join(tmpdir(), 'blockfeed-nginx-'));
  await mkdir(path.join(prefix, 'tmp'));
  await mkdir(path.join(prefix, 'www'));
  await writeFile(path.join(prefix, 'www', 'index.html'), 'served\n');
  // nginx workers run as an unprivileged user; they must read the page (or every answer is a 403).
  await chmod(prefix, 0o755);
  port = await freePort();
  const cidrs = cidrStrings(aggregate(listed.map((a) => parseEntry(a)!)));
  expect(cidrs).toEqual(['127.0.0.5/32', '127.0.0.8/30', '2001:db8::7/128']);
  await writeFile(path.join(prefix, 'deny.conf'), render('nginx', cidrs));
  const tmp = path.join(prefix, 'tmp');
  await writeFile(
    path.join(prefix, 'nginx.conf'),
    `worker_processes 1;
error_log ${prefix}/error.log;
pid ${prefix}/nginx.pid;
events { worker_connections 64; }
http {
  access_log off;
  client_body_temp_path ${tmp}/body; proxy_temp_path ${tmp}/proxy; fastcgi_temp_path ${tmp}/fastcgi;
  uwsgi_temp_path ${tmp}/uwsgi; scgi_temp_path ${tmp}/scgi;
  server {
    listen 127.0.0.1:${port};
    include ${prefix}/deny.conf;
    # A static file: \`return\` would answer in the rewrite phase, before access rules run.
    location / { root ${prefix}/www; }
  }
}
`,
  );
  const args = ['-p', prefix, '-c', path.join(prefix, 'nginx.conf')];
  const test = spawnSync(NGINX, [...args, '-t'], { encoding: 'utf8' });
  expect(test.status, test.stderr).toBe(0);
  nginx = spawn(NGINX, [...args, '-g', 'daemon off;'], { stdio: 'ignore' });
  const deadline = Date.now() + 10_000;
  for (;;) {
    try {
      await get('127.0.0.1');
      break;
    } catch (err) {
      if (Date.now() > deadline) throw err;
      await new Promise((r) => setTimeout(r, 100));
    }
  }
});

afterAll(async () => {
  nginx?.kill('SIGTERM');
  if (nginx && nginx.exitCode === null) await new Promise((r) => nginx.once('exit', r));
  await rm(prefix, { recursive: true, force: true });
});

describe('nginx format in a real nginx', () => {
  it('refuses listed addresses, including those inside an aggregated range', async () => {
    expect(await get('127.0.0.5')).toBe(403);
    expect(await get('127.0.0.9')).toBe(403);
    expect(await get('127.0.0.11')).toBe(403);
  });

  it('serves unlisted addresses', async () => {
    expect(await get('127.0.0.6')).toBe(200);
    expect(await get('127.0.0.12')).toBe(200);
  });
});
