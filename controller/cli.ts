// The controller's command in the blockfeed CLI.
import type { Command } from 'commander';
import { parseIntegerOption, untilSignal } from '../common/cli-support.ts';
import { createLogger, logLevelFromEnv } from '../common/logging.ts';

interface Flags {
  kubeconfig?: string;
  metricsBindAddress: string;
  healthProbeBindAddress: string;
  clusterCidrs: string;
  concurrency: number;
  leaderElect: boolean;
  leaseNamespace?: string;
  leaseName: string;
  leaseDuration: number;
  namespace?: string;
  maxLiveWatches: number;
}

export function registerControllerCommands(program: Command): void {
  program
    .command('controller')
    .description('run the BlocklistSubscription controller (pulls feeds into NetworkPolicies, gateway, mesh and CNI policies, ConfigMaps)')
    .option('--kubeconfig <path>', 'kubeconfig file (default: KUBECONFIG, ~/.kube/config, or in-cluster)')
    .option('--metrics-bind-address <addr>', 'Prometheus /metrics address, 0 = off', ':8080')
    .option('--health-probe-bind-address <addr>', '/healthz and /readyz address, 0 = off', ':8081')
    .option('--cluster-cidrs <cidrs>', "the cluster's pod and service CIDRs, comma-separated; never blocked", '')
    .option('--concurrency <n>', 'subscriptions synced at once', parseIntegerOption('--concurrency', 1, 64), 4)
    .option('--leader-elect', 'run only while holding the leader Lease (for more than one replica)', false)
    .option('--lease-namespace <ns>', 'namespace of the leader Lease (default: own namespace in-cluster, else default)')
    .option('--lease-name <name>', 'name of the leader Lease', 'blockfeed-controller')
    .option('--namespace <ns>', 'watch subscriptions of this namespace only (default: every namespace)')
    .option('--lease-duration <seconds>', 'leader lease duration', parseIntegerOption('--lease-duration', 2, 300), 15)
    .option('--max-live-watches <n>', 'long polls held open at once for live subscriptions (spec.feed.live)', parseIntegerOption('--max-live-watches', 1, 100_000), 1000)
    .action(async (flags: Flags) => {
      // Loaded here, not at the top: the Kubernetes client weighs ~100 MB that every other command would carry.
      const { runController } = await import('./run.ts');
      const log = createLogger({ level: logLevelFromEnv() });
      const { signalled, dispose } = untilSignal(log);
      const running = await runController(
        {
          kubeconfig: flags.kubeconfig,
          metricsBindAddress: flags.metricsBindAddress,
          healthProbeBindAddress: flags.healthProbeBindAddress,
          clusterCidrs: flags.clusterCidrs.split(',').map((s) => s.trim()).filter(Boolean),
          concurrency: flags.concurrency,
          leaderElect: flags.leaderElect,
          leaseNamespace: flags.leaseNamespace,
          leaseName: flags.leaseName,
          leaseDurationSeconds: flags.leaseDuration,
          namespace: flags.namespace,
          maxLiveWatches: flags.maxLiveWatches,
        },
        log,
      );
      const why = await Promise.race([signalled.then(() => 'signal' as const), running.lost.then(() => 'lost' as const)]);
      await running.stop();
      dispose();
      // A process that lost its lease may hold stale state: exit non-zero so the Pod restarts clean.
      if (why === 'lost') process.exitCode = 1;
    });
}
