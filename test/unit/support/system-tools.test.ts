// The tool check every tier runs first: a missing tool is named, and every tier of the configuration has it.
import { chmodSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import config from '../../../vitest.config.ts';
import setup, { TOOLS_BY_TIER, missingTools, searchDirs } from '../../support/system-tools.ts';

function dirWith(executables: string[], plain: string[] = []): string {
  const dir = mkdtempSync(path.join(tmpdir(), 'blockfeed-tools-'));
  for (const name of executables) {
    writeFileSync(path.join(dir, name), '#!/bin/sh\n');
    chmodSync(path.join(dir, name), 0o755);
  }
  for (const name of plain) writeFileSync(path.join(dir, name), '');
  return dir;
}

describe('system tools', () => {
  it('names what is missing; a file that is not executable does not count', () => {
    const dir = dirWith(['promtool', 'hydra', 'sshpass', 'ssh', 'ip', 'ss', 'unshare', 'nsenter'], ['nginx']);
    expect(missingTools('unit', [dir])).toEqual([]);
    expect(missingTools('integration', [dir])).toEqual(['nginx', 'setpriv']);
    expect(missingTools('e2e', [dir])).toEqual(['prometheus', 'openssl', 'setpriv']);
  });

  it('looks in /usr/sbin and /sbin too, which a minimal PATH leaves out', () => {
    expect(searchDirs('/usr/local/bin:/usr/bin:/bin')).toEqual(['/usr/local/bin', '/usr/bin', '/bin', '/usr/sbin', '/sbin']);
  });

  it('a tier with a missing tool fails before its tests, saying how to install it', () => {
    const path = process.env.PATH;
    process.env.PATH = dirWith([]);
    try {
      expect(() => setup({ name: 'e2e' } as Parameters<typeof setup>[0])).toThrow(/the e2e tier runs prometheus, openssl, setpriv, which are not installed: run \.ci\/system-deps/);
    } finally {
      process.env.PATH = path;
    }
  });

  it('every tier of vitest.config.ts checks its tools first', () => {
    const projects = (config.test?.projects ?? []) as { test: { name: string; globalSetup?: string[] } }[];
    expect(projects.map((p) => p.test.name).sort()).toEqual(Object.keys(TOOLS_BY_TIER).sort());
    for (const p of projects) expect(p.test.globalSetup?.[0], p.test.name).toBe('test/support/system-tools.ts');
  });
});
