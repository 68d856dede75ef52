import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { pushUrl, readToken } from '../../../shipper/run.ts';

describe('pushUrl', () => {
  it("is the push route under the api-server's base URL, with the format and sensor as its query", () => {
    expect(pushUrl('https://blockfeed.example.org', 'cowrie', undefined).href).toBe('https://blockfeed.example.org/internal/v1/events?format=cowrie');
    expect(pushUrl('http://10.0.0.5:8080/blockfeed/', 'native', 'hp 1').href).toBe('http://10.0.0.5:8080/blockfeed/internal/v1/events?format=native&sensor=hp+1');
    expect(pushUrl('http://api:8080/internal/v1/events', 'opencanary', undefined).href).toBe('http://api:8080/internal/v1/events?format=opencanary');
  });

  it('refuses what is not an http(s) URL, and credentials, queries and fragments in it', () => {
    expect(() => pushUrl('blockfeed.example.org', 'cowrie', undefined)).toThrow('--url "blockfeed.example.org" is not a URL');
    expect(() => pushUrl('ftp://x', 'cowrie', undefined)).toThrow('--url must be http:// or https://');
    expect(() => pushUrl('https://u:p@x', 'cowrie', undefined)).toThrow('--url must not carry credentials');
    expect(() => pushUrl('https://x/?format=native', 'cowrie', undefined)).toThrow('--url must not carry a query');
  });
});

describe('readToken', () => {
  let dir: string;
  beforeAll(async () => {
    dir = await mkdtemp(path.join(tmpdir(), 'ship-token-'));
  });
  afterAll(async () => rm(dir, { recursive: true, force: true }));

  it('reads the token without its line end, and never prints it in a refusal', async () => {
    const file = path.join(dir, 'token');
    await writeFile(file, 'secret-token-0123456789\n');
    expect(await readToken(file)).toBe('secret-token-0123456789');
    await writeFile(file, ' \n');
    await expect(readToken(file)).rejects.toThrow(`--token-file ${file}: empty`);
    await writeFile(file, 'secret-one\nsecret-two\n');
    const err = (await readToken(file).catch((e: unknown) => e)) as Error;
    expect(err.message).toBe(`--token-file ${file}: the token must be one line of printable characters`);
    await expect(readToken(path.join(dir, 'missing'))).rejects.toThrow(/cannot read \(ENOENT\)/);
  });
});
