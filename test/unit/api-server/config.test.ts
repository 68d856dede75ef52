import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { ConfigSchema, describeSettings, loadConfig } from '../../../api-server/config.ts';
import { UserError } from '../../../common/errors.ts';

describe('loadConfig', () => {
  it('applies defaults when nothing is set', () => {
    const c = loadConfig({ env: {} });
    expect(c).toMatchObject({ port: 8080, host: '0.0.0.0', dataDir: './.blockfeed', logLevel: 'info' });
    expect(c.databaseUrl).toBeUndefined();
  });

  it('coerces environment strings to the schema types', () => {
    const c = loadConfig({ env: { PORT: '9090', LOG_LEVEL: 'debug', DATABASE_URL: 'postgres://u@h/db' } });
    expect(c).toMatchObject({ port: 9090, logLevel: 'debug', databaseUrl: 'postgres://u@h/db' });
  });

  it.each([
    [{ PORT: 'eighty' }, 'invalid configuration: PORT="eighty": must be an integer from 0 to 65535'],
    [{ PORT: '70000' }, 'PORT="70000": must be an integer from 0 to 65535'],
    [{ LOG_LEVEL: 'loud' }, 'LOG_LEVEL="loud": must be one of: fatal, error, warn, info, debug, trace, silent'],
    [{ DATABASE_URL: 'mysql://x' }, 'DATABASE_URL="mysql://x": must be a string matching ^postgres(ql)?://'],
  ])('rejects %o naming the variable and what it allows', (env, message) => {
    expect(() => loadConfig({ env })).toThrow(UserError);
    expect(() => loadConfig({ env })).toThrow(message);
  });

  it('reads a YAML file, with the environment taking precedence', () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'bf-config-'));
    const file = path.join(dir, 'blockfeed.yaml');
    writeFileSync(file, 'port: 7000\nlogLevel: warn\n');
    expect(loadConfig({ env: { BLOCKFEED_CONFIG: file } })).toMatchObject({ port: 7000, logLevel: 'warn' });
    expect(loadConfig({ env: { BLOCKFEED_CONFIG: file, PORT: '7001' } }).port).toBe(7001);
  });

  it('names the file and key of a bad YAML value, and rejects unknown keys', () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'bf-config-'));
    const bad = path.join(dir, 'bad.yaml');
    writeFileSync(bad, 'port: -1\n');
    expect(() => loadConfig({ env: { BLOCKFEED_CONFIG: bad } })).toThrow(`${bad}: port=-1: must be an integer from 0 to 65535`);
    writeFileSync(bad, 'prot: 1\n');
    expect(() => loadConfig({ env: { BLOCKFEED_CONFIG: bad } })).toThrow('unknown setting "prot"');
  });

  // The type makes a setting optional unless it is listed as required; only a default makes it always there.
  it('lists as required exactly the settings with a default', () => {
    const withDefault = Object.entries(ConfigSchema.properties).filter(([, s]) => 'default' in s).map(([key]) => key);
    expect([...ConfigSchema.required].sort()).toEqual(withDefault.sort());
  });

  it('documents every setting with its variable', () => {
    const envs = describeSettings().map((s) => s.env);
    expect(envs).toEqual(expect.arrayContaining(['PORT', 'DATABASE_URL', 'BLOCKFEED_DATA_DIR', 'LOG_LEVEL']));
  });
});
