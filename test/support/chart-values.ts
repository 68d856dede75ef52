// Chart values shared by the chart tier (helm template) and the k8s tier (the chart installed).

/** Every optional part switched on (the external database: the bundled one is the default's). */
export const ALL_ON = {
  commonLabels: { team: 'platform' },
  imagePullSecrets: [{ name: 'registry' }],
  database: { type: 'external', external: { url: 'postgresql://blockfeed:s3cret@db.example:5432/blockfeed?sslmode=require' } },
  api: {
    autoscaling: { enabled: true, minReplicas: 3, maxReplicas: 9 },
    podDisruptionBudget: { enabled: true, minAvailable: 2 },
    ingest: { enabled: true },
    trustedProxies: ['10.0.0.0/8', 'fd00::/8'],
    tiers: { member: 'none', basic: 50, pro: 20000, enterprise: 'unlimited' },
    anonymousPerMinute: 10,
    cache: { maxBytes: 67108864, keyCacheSeconds: 5, lifetimes: { variantA: 300, recent: 30 } },
    extraEnv: [{ name: 'EXTRA_SETTING', value: 'x' }],
    podAnnotations: { 'example.com/a': 'b' },
    topologySpreadConstraints: [{ maxSkew: 1, topologyKey: 'kubernetes.io/hostname', whenUnsatisfiable: 'ScheduleAnyway', labelSelector: { matchLabels: { 'app.kubernetes.io/component': 'api-server' } } }],
  },
  sensors: { cowrie: { enabled: true, sensorName: 'hp-chart-1', config: '[shell]\nkernel_version = 6.1.0-18-amd64\n', userdb: 'root:x:!root\nroot:x:*\n' } },
  controller: { replicas: 2, clusterCidrs: ['10.244.0.0/16', '10.96.0.0/12', 'fd00:10:96::/112'], concurrency: 8, watchNamespace: 'subscriptions', extraArgs: ['--example'] },
  metrics: { serviceMonitor: { enabled: true, labels: { release: 'prom' } }, prometheusRule: { enabled: true, labels: { release: 'prom' } }, grafanaDashboard: { enabled: true, labels: { release: 'prom' } } },
};

/** The database as a CloudNativePG Cluster, with the parts the chart passes on set (the operator is not needed to render). */
export const CLOUDNATIVEPG = {
  database: {
    type: 'cloudnativepg',
    cloudnativepg: {
      instances: 2,
      imageName: 'ghcr.io/cloudnative-pg/postgresql:17.5',
      minSyncReplicas: 1,
      maxSyncReplicas: 1,
      storage: { size: '20Gi', storageClass: 'fast' },
      clusterSpec: {
        postgresql: { parameters: { max_connections: '200' } },
        plugins: [{ name: 'barman-cloud.cloudnative-pg.io', isWALArchiver: true, parameters: { barmanObjectName: 'blockfeed-backups' } }],
      },
    },
  },
  metrics: { serviceMonitor: { enabled: true, labels: { release: 'prom' } } },
};
