// The chart files with another source of truth are current: run `make chart-files` when this fails.
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { CONTROLLER_CLUSTER_RULES, CONTROLLER_LEADER_ELECTION_RULES } from '../../controller/rbac.ts';
import { chartCrdFiles, generatedChartFiles, REPO } from '../../hack/generate-chart-files.ts';

describe('generated chart files (make chart-files)', () => {
  const files = generatedChartFiles();

  for (const [rel, content] of files) {
    it(`${rel} is current`, () => {
      const file = path.join(REPO, rel);
      expect(existsSync(file), `${rel} missing: run make chart-files`).toBe(true);
      expect(readFileSync(file, 'utf8'), `${rel} is stale: run make chart-files`).toBe(content);
    });
  }

  it('the chart carries exactly the CRDs of crds/, byte for byte', () => {
    const expected = [...files.keys()].filter((k) => k.startsWith('charts/blockfeed/crds/')).map((k) => path.basename(k));
    expect(chartCrdFiles()).toEqual(expected);
  });

  it('the RBAC data file holds the rules of controller/rbac.ts', () => {
    const data = parse(readFileSync(path.join(REPO, 'charts/blockfeed/files/controller-rbac.yaml'), 'utf8')) as Record<string, unknown>;
    expect(data.clusterRules).toEqual(CONTROLLER_CLUSTER_RULES);
    expect(data.leaderElectionRules).toEqual(CONTROLLER_LEADER_ELECTION_RULES);
  });

  it("the chart's appVersion is package.json's version", () => {
    const pkg = JSON.parse(readFileSync(path.join(REPO, 'package.json'), 'utf8')) as { version: string };
    const chart = parse(readFileSync(path.join(REPO, 'charts/blockfeed/Chart.yaml'), 'utf8')) as { appVersion: string };
    expect(chart.appVersion).toBe(pkg.version);
  });
});
