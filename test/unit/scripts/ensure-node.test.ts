// scripts/ensure-node.sh picks the system Node when it is new enough (>= 22.12), judged from `node --version`
// alone, and the project-local one otherwise. The script runs from a copy in a temporary tree, where fake
// `node` binaries that only answer --version stand in for both.
import { execFileSync } from 'node:child_process';
import { chmodSync, copyFileSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';

const root = mkdtempSync(path.join(tmpdir(), 'ensure-node-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));
mkdirSync(path.join(root, 'scripts'));
const SCRIPT = path.join(root, 'scripts', 'ensure-node.sh');
copyFileSync(fileURLToPath(new URL('../../../scripts/ensure-node.sh', import.meta.url)), SCRIPT);

/**
 * A directory holding bin/node that prints `version` for --version and fails on anything else. Like a real
 * Node, it refuses to start when NODE_OPTIONS holds a flag that is not allowed there (here: any).
 */
function fakeNode(version: string, home = path.join(root, 'system', version.replace(/\W/g, '_'))): string {
  mkdirSync(path.join(home, 'bin'), { recursive: true });
  const node = path.join(home, 'bin', 'node');
  writeFileSync(node, `#!/bin/sh\n[ -n "$NODE_OPTIONS" ] && exit 9\n[ "$1" = --version ] && echo '${version}' && exit 0\nexit 3\n`);
  chmodSync(node, 0o755);
  return home;
}

/** The project-local Node the script installs (already there, so it installs nothing). */
const LOCAL = fakeNode('v24.21.0', path.join(root, '.cache', 'node', 'v24.21.0'));

/** The Node home ensure-node.sh prints with only the fake's bin (and the shell's own tools) on PATH. */
function chosen(home: string, env: Record<string, string> = {}): string {
  return execFileSync('bash', [SCRIPT], { env: { PATH: `${home}/bin:/usr/bin:/bin`, NODE_VERSION: '24.21.0', ...env }, encoding: 'utf8' }).trim();
}

describe('ensure-node.sh', () => {
  it.each(['v22.12.0', 'v22.13.1', 'v23.0.0', 'v24.21.0', 'v30.1.2'])('takes the system Node %s', (version) => {
    const home = fakeNode(version);
    expect(chosen(home)).toBe(home);
  });

  it.each(['v20.20.2', 'v22.11.0', 'v18.0.0', 'not a version'])('passes over the system Node %s', (version) => {
    expect(chosen(fakeNode(version))).toBe(LOCAL);
  });

  // `node --prof` must be given on the command line (Node refuses it in NODE_OPTIONS), but a NODE_OPTIONS
  // meant for the command being run must not make the script think a Node broken, and fetch another.
  it('judges a Node by its version whatever NODE_OPTIONS holds', () => {
    const home = fakeNode('v24.1.0');
    expect(chosen(home, { NODE_OPTIONS: '--prof' })).toBe(home);
    expect(chosen(fakeNode('v20.20.2'), { NODE_OPTIONS: '--prof' })).toBe(LOCAL);
  });
});
