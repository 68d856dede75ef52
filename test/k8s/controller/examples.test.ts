// Every example subscription in examples/subscriptions is accepted by the real api-server (schema + CEL).
import { readdirSync, readFileSync } from 'node:fs';
import { CustomObjectsApi } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import { parseAllDocuments } from 'yaml';
import { GROUP, PLURAL, VERSION } from '../../../api/v1alpha1/blocklist-subscription.ts';
import { freshNamespace, kubeConfig } from '../../support/k8s.ts';

const dir = new URL('../../../examples/subscriptions/', import.meta.url);
const files = readdirSync(dir).filter((f) => f.endsWith('.yaml'));

describe('examples/subscriptions', () => {
  it('has examples', () => expect(files.length).toBeGreaterThanOrEqual(4));

  it.each(files)('%s is accepted by the api-server', async (file) => {
    const custom = kubeConfig().makeApiClient(CustomObjectsApi);
    const namespace = await freshNamespace('bls-example');
    const docs = parseAllDocuments(readFileSync(new URL(file, dir), 'utf8')).map((d) => d.toJS() as { kind: string; metadata: { namespace?: string } });
    const subs = docs.filter((d) => d.kind === 'BlocklistSubscription');
    expect(subs.length).toBeGreaterThan(0);
    for (const sub of subs) {
      const body = { ...sub, metadata: { ...sub.metadata, namespace } };
      const created = (await custom.createNamespacedCustomObject({ group: GROUP, version: VERSION, namespace, plural: PLURAL, body, dryRun: 'All' })) as {
        spec: { targets: unknown[] };
      };
      expect(created.spec.targets.length).toBeGreaterThan(0);
    }
  });
});
