import { describe, expect, it } from 'vitest';
import { SERVICE_PORTS, SERVICES, serviceOfPort } from '../../../common/vocabulary.ts';

describe('the service vocabulary', () => {
  it('names the service of each well-known port, and no other', () => {
    for (const service of SERVICES) for (const port of SERVICE_PORTS[service]) expect(serviceOfPort(port)).toBe(service);
    expect(serviceOfPort(1)).toBeUndefined();
  });
});
