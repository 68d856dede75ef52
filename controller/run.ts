// `blockfeed controller`: connects to the cluster, serves metrics and health probes, and runs the subscription
// loop — only while holding the leader lease when leader election is on.
import { readFileSync } from 'node:fs';
import type { RequestListener, Server } from 'node:http';
import { hostname } from 'node:os';
import { randomBytes } from 'node:crypto';
import { KubeConfig } from '@kubernetes/client-node';
import type { Logger } from '../common/logging.ts';
import { UserError } from '../common/errors.ts';
import { listen, metricsHandler, parseBindAddress } from '../common/http-endpoints.ts';
import { parseCidrStrict } from './cidr.ts';
import { SubscriptionController } from './controller.ts';
import { closeConnections, makeApis } from './runtime/k8s.ts';
import { LeaderElector } from './runtime/leader.ts';
import { createControllerMetrics } from './metrics.ts';

interface ControllerRunOptions {
  kubeconfig?: string;
  metricsBindAddress: string;
  healthProbeBindAddress: string;
  clusterCidrs: string[];
  concurrency: number;
  leaderElect: boolean;
  leaseNamespace?: string;
  leaseName: string;
  leaseDurationSeconds: number;
  namespace?: string;
  maxLiveWatches: number;
}

interface RunningController {
  stop(): Promise<void>;
  /** resolves when the process must exit (leadership lost) */
  lost: Promise<void>;
}

function inClusterNamespace(): string | undefined {
  try {
    return readFileSync('/var/run/secrets/kubernetes.io/serviceaccount/namespace', 'utf8').trim();
  } catch {
    return undefined;
  }
}

export async function runController(options: ControllerRunOptions, log: Logger): Promise<RunningController> {
  for (const cidr of options.clusterCidrs) {
    try {
      parseCidrStrict(cidr);
    } catch {
      throw new UserError(`--cluster-cidrs: "${cidr}" is not a CIDR such as 10.244.0.0/16`);
    }
  }
  const metricsBind = parseBindAddress(options.metricsBindAddress, '--metrics-bind-address');
  const healthBind = parseBindAddress(options.healthProbeBindAddress, '--health-probe-bind-address');
  const kubeConfig = new KubeConfig();
  try {
    if (options.kubeconfig) kubeConfig.loadFromFile(options.kubeconfig);
    else kubeConfig.loadFromDefault();
  } catch (err) {
    throw new UserError(`--kubeconfig: cannot load ${options.kubeconfig ?? 'the default kubeconfig'}: ${(err as Error).message}`);
  }
  if (!kubeConfig.getCurrentCluster()) throw new UserError('no Kubernetes cluster configured: pass --kubeconfig or run in a cluster');

  const apis = makeApis(kubeConfig);
  const metrics = createControllerMetrics();
  const identity = `${hostname()}_${process.pid}_${randomBytes(3).toString('hex')}`;
  let controller: SubscriptionController | undefined;
  let ready = false;

  const servers: Server[] = [];
  if (metricsBind) {
    servers.push(await listen(metricsHandler(metrics.registry), metricsBind, 'metrics', log));
  }
  if (healthBind) {
    const probes: RequestListener = (req, res) => {
      if (req.url === '/healthz') res.writeHead(200).end('ok');
      else if (req.url === '/readyz') res.writeHead(ready ? 200 : 503).end(ready ? 'ok' : 'starting');
      else res.writeHead(404).end();
    };
    servers.push(await listen(probes, healthBind, 'health probes', log));
  }

  const startLoop = async () => {
    metrics.isLeader.set(1);
    controller = new SubscriptionController({ apis, log, metrics, clusterCidrs: options.clusterCidrs, concurrency: options.concurrency, instance: identity, namespace: options.namespace, maxLiveWatches: options.maxLiveWatches });
    await controller.start();
    log.info({ identity }, 'watching BlocklistSubscriptions');
  };

  let signalLost!: () => void;
  const lost = new Promise<void>((r) => (signalLost = r));
  let elector: LeaderElector | undefined;
  if (options.leaderElect) {
    const namespace = options.leaseNamespace ?? inClusterNamespace() ?? 'default';
    elector = new LeaderElector({
      apis,
      log,
      namespace,
      name: options.leaseName,
      identity,
      leaseDurationSeconds: options.leaseDurationSeconds,
      renewDeadlineMs: Math.round(options.leaseDurationSeconds * 666),
      retryPeriodMs: Math.max(200, Math.round(options.leaseDurationSeconds * 133)),
      onStartedLeading: startLoop,
      onStoppedLeading: () => {
        metrics.isLeader.set(0);
        void controller?.stop();
        signalLost();
      },
    });
    elector.start();
    log.info({ identity, lease: `${namespace}/${options.leaseName}` }, 'waiting for the leader lease');
  } else {
    await startLoop();
  }
  ready = true;

  return {
    lost,
    async stop() {
      await controller?.stop();
      await elector?.stop();
      await closeConnections(apis);
      for (const s of servers) {
        s.closeAllConnections();
        await new Promise((r) => s.close(r));
      }
    },
  };
}
