// `blockfeed controller` refuses bad flags with one clear line, before touching any cluster.
import { describe, expect, it } from 'vitest';
import { runCli } from '../../support/cli.ts';

describe('blockfeed controller flags', () => {
  it.each([
    [['--cluster-cidrs', '10.244.0.0/16,pods'], /--cluster-cidrs: "pods" is not a CIDR/],
    [['--metrics-bind-address', 'eight-thousand'], /--metrics-bind-address must look like :8080/],
    [['--concurrency', '0'], /--concurrency must be an integer from 1 to 64/],
    [['--kubeconfig', '/nonexistent/kubeconfig'], /^blockfeed: --kubeconfig: cannot load \/nonexistent\/kubeconfig: .*no such file/im],
  ])('refuses %j', async (args, message) => {
    const result = await runCli(['controller', '--metrics-bind-address', '0', '--health-probe-bind-address', '0', ...args]);
    expect(result.code).not.toBe(0);
    expect(result.stderr).toMatch(message);
  });
});
