import { describe, expect, it } from 'vitest';
import { SERVICE_INDEX, SERVICE_PORTS, SERVICES, serviceIndexOfPort, serviceOfPort } from '../../../common/vocabulary.ts';

describe('the service vocabulary', () => {
  it('names the service of each well-known port, and no other', () => {
    for (const service of SERVICES) for (const port of SERVICE_PORTS[service]) expect(serviceOfPort(port)).toBe(service);
    expect(serviceOfPort(1)).toBeUndefined();
  });

  it('gives the same answer by index for every port (the ingest byte path uses the index)', () => {
    for (let port = 0; port <= 65_535; port++) {
      const service = serviceOfPort(port);
      expect(serviceIndexOfPort(port)).toBe(service === undefined ? -1 : SERVICE_INDEX.get(service));
    }
  });
});
