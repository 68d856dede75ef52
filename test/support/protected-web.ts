// The workload the cluster tests protect: busybox httpd, not root, answering "protected" on port 8080 (named
// `http`), in a namespace labelled blockfeed.dev/protect=true, the label their subscriptions select.
import { AppsV1Api, CoreV1Api } from '@kubernetes/client-node';
import { podReady, type Cluster } from './cluster.ts';
import { eventually } from './k8s.ts';

/** Creates the namespace and the `web` Deployment (pods labelled app=web); resolves with its pod's address once Ready. */
export async function startProtectedWeb(cluster: Cluster, namespace: string): Promise<string> {
  const core = cluster.kc.makeApiClient(CoreV1Api);
  await core.createNamespace({ body: { metadata: { name: namespace, labels: { 'blockfeed.dev/protect': 'true' } } } });
  await cluster.kc.makeApiClient(AppsV1Api).createNamespacedDeployment({
    namespace,
    body: {
      metadata: { name: 'web' },
      spec: {
        selector: { matchLabels: { app: 'web' } },
        template: {
          metadata: { labels: { app: 'web' } },
          spec: {
            securityContext: { runAsNonRoot: true, runAsUser: 1000, runAsGroup: 1000 },
            containers: [
              {
                name: 'httpd',
                image: cluster.images.busybox,
                imagePullPolicy: 'Never',
                command: ['sh', '-c', 'echo protected > /www/index.html && exec httpd -f -p 8080 -h /www'],
                ports: [{ name: 'http', containerPort: 8080 }],
                readinessProbe: { tcpSocket: { port: 8080 }, periodSeconds: 1 },
                volumeMounts: [{ name: 'www', mountPath: '/www' }],
              },
            ],
            volumes: [{ name: 'www', emptyDir: {} }],
          },
        },
      },
    },
  });
  const web = await eventually(async () => (await core.listNamespacedPod({ namespace, labelSelector: 'app=web' })).items.find(podReady), 120_000, 'the web workload Ready');
  return web.status?.podIP ?? '';
}
