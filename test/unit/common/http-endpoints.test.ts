import { describe, expect, it } from 'vitest';
import { UserError } from '../../../common/errors.ts';
import { parseBindAddress } from '../../../common/http-endpoints.ts';

describe('parseBindAddress', () => {
  it('reads :port, host:port and [ipv6]:port, and 0 as off', () => {
    expect(parseBindAddress(':8080', '--metrics-bind-address')).toEqual({ host: '0.0.0.0', port: 8080 });
    expect(parseBindAddress('127.0.0.1:0', '--metrics-bind-address')).toEqual({ host: '127.0.0.1', port: 0 });
    expect(parseBindAddress('[::1]:9464', '--metrics-bind-address')).toEqual({ host: '::1', port: 9464 });
    expect(parseBindAddress('0', '--metrics-bind-address')).toBeUndefined();
  });

  it('refuses anything else, naming the flag', () => {
    for (const text of ['8080', 'localhost', ':70000', '']) {
      expect(() => parseBindAddress(text, '--health-probe-bind-address')).toThrow(UserError);
      expect(() => parseBindAddress(text, '--health-probe-bind-address')).toThrow(/^--health-probe-bind-address must look like :8080/);
    }
  });
});
