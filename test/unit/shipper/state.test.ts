import { mkdtemp, readdir, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { UserError } from '../../../common/errors.ts';
import { emptyState, parseState, readState, serializeState, writeState, type ShipState } from '../../../shipper/state.ts';

const STATE: ShipState = {
  version: 1,
  files: {
    '/var/log/cowrie/cowrie.json': { ino: '18446744073709551000', head: 'a'.repeat(64), headLength: 4096, offset: 1_234_567, line: 4242 },
    '/var/log/canary.log': { ino: '12', head: '', headLength: 0, offset: 0, line: 0, reading: '/var/log/canary.log.1' },
  },
};

describe('the state file', () => {
  let dir: string;
  beforeAll(async () => {
    dir = await mkdtemp(path.join(tmpdir(), 'ship-state-'));
  });
  afterAll(async () => rm(dir, { recursive: true, force: true }));

  it('reads back what it wrote, inodes beyond 2^53 included', () => {
    expect(parseState(serializeState(STATE), 'state.json')).toEqual(STATE);
  });

  it('refuses a file that is not a state, naming the file, the problem and what to do', () => {
    const refused = (text: string) => {
      try {
        parseState(text, '/var/lib/ship/state.json');
      } catch (err) {
        expect(err).toBeInstanceOf(UserError);
        return (err as Error).message;
      }
      throw new Error('accepted');
    };
    expect(refused('')).toMatch(/^state file \/var\/lib\/ship\/state\.json: not valid JSON .*move it away to ship every followed file again/);
    expect(refused('{"version":2,"files":{}}')).toContain('not a version 1 shipper state');
    expect(refused(JSON.stringify({ version: 1, files: { '/x': { ...STATE.files['/var/log/canary.log'], offset: -1 } } }))).toContain('"/x": "offset"');
    expect(refused(JSON.stringify({ version: 1, files: { '/x': { ...STATE.files['/var/log/canary.log'], ino: 12 } } }))).toContain('"ino" must be a decimal string');
    expect(refused(JSON.stringify({ version: 1, files: { '/x': { ino: '1', head: '', headLength: 10, offset: 5, line: 1 } } }))).toContain('"offset" must be an integer no smaller than "headLength"');
  });

  it('is empty before the first run, and a file that cannot be read is an error, never a fresh start', async () => {
    expect(await readState(path.join(dir, 'missing.json'))).toEqual(emptyState());
    await writeFile(path.join(dir, 'broken.json'), '{"version":1,"fi');
    await expect(readState(path.join(dir, 'broken.json'))).rejects.toThrow(/broken\.json: not valid JSON/);
    await expect(readState(dir)).rejects.toThrow(/cannot read \(EISDIR\)/);
  });

  it('is replaced whole, private to its owner, with no temporary file left beside it', async () => {
    const file = path.join(dir, 'sub', 'state.json');
    await writeState(file, emptyState());
    await writeState(file, STATE);
    expect(JSON.parse(await readFile(file, 'utf8'))).toEqual(STATE);
    expect((await stat(file)).mode & 0o777).toBe(0o600);
    expect(await readdir(path.dirname(file))).toEqual(['state.json']);
  });
});
