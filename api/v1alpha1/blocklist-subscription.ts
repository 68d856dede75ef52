// BlocklistSubscription v1alpha1: the one source of truth for the CRD's OpenAPI schema (crds/ is generated from
// it by hack/generate-crd.ts) and for the TypeScript types of the controller and of the manifests the member
// centre writes: the contract both programs import, and neither imports the other's code. The feed's filters come from the table of
// list filters the api-server validates with, so the CRD accepts exactly what the api-server accepts.
import Type, { type Static, type TSchema } from 'typebox';
import { FILTER_NAMES, LIST_ENDPOINTS, LIST_FILTERS, MAX_HOURS, filtersOf, type FilterName, type FilterSetting, type FilterSpec } from '../../common/list-filters.ts';

export const GROUP = 'blockfeed.dev';
export const VERSION = 'v1alpha1';
export const KIND = 'BlocklistSubscription';
export const PLURAL = 'blocklistsubscriptions';
export const API_VERSION = `${GROUP}/${VERSION}`;

/**
 * Set to any new value (`date +%s`) to have a subscription synced now: Flux's annotation, which GitOps tools and
 * `flux reconcile` already set. The controller records the value it handled in status.lastHandledReconcileAt
 * and leaves the annotation alone (removing it would fight whatever manages the object).
 */
export const RECONCILE_REQUEST_ANNOTATION = 'reconcile.fluxcd.io/requestedAt';

/** A CEL rule in the form the api-server evaluates (x-kubernetes-validations). */
interface CelRule {
  rule: string;
  message: string;
  fieldPath?: string;
  reason?: 'FieldValueInvalid' | 'FieldValueForbidden' | 'FieldValueRequired' | 'FieldValueDuplicate';
}

// Structural schemas need `type` beside `enum` (TypeBox's Enum omits it), so closed string sets are spelled here.
function StringEnum<const T extends readonly string[]>(values: T, options: { description: string; default?: T[number] }) {
  return Type.Unsafe<T[number]>({ type: 'string', enum: [...values], ...options });
}

function StringMap(description: string) {
  return Type.Unsafe<Record<string, string>>({ type: 'object', additionalProperties: { type: 'string' }, description });
}

/** Kubernetes' metav1.LabelSelector, as the CRD needs to validate it. */
const LabelSelector = (description: string) =>
  Type.Object(
    {
      matchLabels: Type.Optional(StringMap('labels that must all be present with these values')),
      matchExpressions: Type.Optional(
        Type.Array(
          Type.Object({
            key: Type.String({ description: 'label key' }),
            operator: StringEnum(['In', 'NotIn', 'Exists', 'DoesNotExist'] as const, { description: 'how key relates to values' }),
            values: Type.Optional(Type.Array(Type.String(), { description: 'values for In and NotIn' })),
          }),
          { description: 'label requirements that must all hold' },
        ),
      ),
    },
    { description: `${description}; an empty selector selects everything` },
  );

// The filters come from the one table of list filters (common/list-filters.ts): the same names, values and
// endpoints as the api-server's query schemas. CEL rules refuse a filter its endpoint does not take and a
// window wider than it serves, so a typo'd subscription fails at `kubectl apply`, not at 3 a.m.
function filterRules(): CelRule[] {
  const rules: CelRule[] = [];
  for (const endpoint of LIST_ENDPOINTS) {
    const taken = filtersOf(endpoint);
    const others = FILTER_NAMES.filter((f) => !taken.includes(f));
    rules.push({
      rule: `self.endpoint != '${endpoint}' || !has(self.filters) || !(${others.map((f) => `has(self.filters.${f})`).join(' || ')})`,
      message: `endpoint ${endpoint} accepts only the filters: ${taken.join(', ')}`,
      fieldPath: '.filters',
      reason: 'FieldValueForbidden',
    });
    rules.push({
      rule: `self.endpoint != '${endpoint}' || !has(self.filters) || !has(self.filters.hours) || self.filters.hours <= ${MAX_HOURS[endpoint]}`,
      message: `hours on endpoint ${endpoint} must be at most ${MAX_HOURS[endpoint]}`,
      fieldPath: '.filters.hours',
    });
  }
  return rules;
}

/** A filter as the CRD holds it: closed sets as string enums, the window as an integer, switches as booleans. */
function crdFilter(filter: FilterSpec): TSchema {
  const description = `${filter.description}; endpoints: ${filter.endpoints.join(', ')}`;
  switch (filter.values.kind) {
    case 'choice':
      return StringEnum(filter.values.values, { description });
    case 'hours':
      return Type.Integer({ minimum: 1, maximum: Math.max(...Object.values(MAX_HOURS)), description });
    case 'switch':
      return Type.Boolean({ description: `${description}; sent as ${filter.param}=1 or 0` });
  }
}

const Filters = Type.Unsafe<Partial<Record<FilterName, FilterSetting>>>(
  Type.Object(Object.fromEntries(FILTER_NAMES.map((name) => [name, Type.Optional(crdFilter(LIST_FILTERS[name]))])), {
    description: 'query parameters of the endpoint; each endpoint accepts only its own (see the CEL rules)',
  }),
);

/** The defaults of spec.feed.live, written once (the CRD's and the controller's fallback). */
export const LIVE_DEFAULTS = { enabled: false, minIntervalSeconds: 5 } as const;

const Live = Type.Object(
  {
    enabled: Type.Boolean({
      default: LIVE_DEFAULTS.enabled,
      description: 'hold a long poll on the feed (wait=, a blockfeed api-server) and sync within seconds of new data, besides the schedule',
    }),
    minIntervalSeconds: Type.Integer({
      minimum: 1,
      maximum: 3600,
      default: LIVE_DEFAULTS.minIntervalSeconds,
      description: 'at most one long poll starts per this many seconds: while the data keeps changing, a sync at most this often',
    }),
  },
  {
    description:
      'live blocking: the controller keeps a long poll open on the feed and syncs as soon as its data changes; each poll is one call of the key\'s quota (about 1,440 a day while nothing changes)',
  },
);

const Feed = Type.Object(
  {
    url: Type.String({
      pattern: '^https?://[^\\s?#]+$',
      maxLength: 2048,
      description: 'base URL of a blockfeed api-server (or a compatible feed), e.g. http://blockfeed-api.blockfeed.svc:8080',
    }),
    endpoint: StringEnum(LIST_ENDPOINTS, { description: 'which list to pull: /api/dedup, /api/export or /api/scan-export', default: 'export' }),
    filters: Type.Optional(Filters),
    credentials: Type.Optional(
      Type.Object(
        {
          secretRef: Type.Object(
            {
              name: Type.String({ minLength: 1, maxLength: 253, description: 'name of a Secret in the subscription namespace' }),
              key: Type.String({ minLength: 1, maxLength: 253, default: 'apiKey', description: 'key in the Secret holding the API key' }),
            },
            { description: 'the Secret holding the subscription API key' },
          ),
        },
        { description: 'API key of the feed, sent as the X-API-Key header (never in the URL)' },
      ),
    ),
    timeoutSeconds: Type.Optional(Type.Integer({ minimum: 1, maximum: 600, default: 60, description: 'give up on a pull after this many seconds' })),
    maxBodyBytes: Type.Optional(
      Type.Integer({ minimum: 1024, maximum: 1_073_741_824, default: 67_108_864, description: 'refuse a feed body larger than this many bytes' }),
    ),
    live: Type.Optional(Live),
  },
  {
    description: 'where and what to pull',
    'x-kubernetes-validations': filterRules(),
  },
);

/**
 * The safety checks' defaults, written once: the CRD's defaults (the apiserver fills them in, per field and for an
 * omitted block as a whole) and the safety stage's fallback for a subscription stored without them.
 */
export const SAFETY_DEFAULTS = { maxEntries: 200_000, minPrefixV4: 16, minPrefixV6: 32, maxShrinkPercent: 50 } as const;

const Safety = Type.Object(
  {
    maxEntries: Type.Integer({ minimum: 1, maximum: 10_000_000, default: SAFETY_DEFAULTS.maxEntries, description: 'refuse a list with more entries than this (after sanitising)' }),
    minPrefixV4: Type.Integer({ minimum: 0, maximum: 32, default: SAFETY_DEFAULTS.minPrefixV4, description: 'refuse IPv4 entries broader than this prefix length' }),
    minPrefixV6: Type.Integer({ minimum: 0, maximum: 128, default: SAFETY_DEFAULTS.minPrefixV6, description: 'refuse IPv6 entries broader than this prefix length' }),
    maxShrinkPercent: Type.Integer({
      minimum: 0,
      maximum: 100,
      default: SAFETY_DEFAULTS.maxShrinkPercent,
      description: 'refuse a list that shrank by more than this percentage since the last applied one (100 = never refuse)',
    }),
  },
  {
    default: { ...SAFETY_DEFAULTS },
    description: 'checks a pulled list must pass before it is applied; a refused list leaves the last one in force',
  },
);

const NetworkPolicyTarget = Type.Object(
  {
    namespaceSelector: LabelSelector('namespaces that get a blocking NetworkPolicy'),
    podSelector: Type.Optional(LabelSelector('pods of those namespaces the policy applies to')),
    direction: StringEnum(['Ingress', 'Egress'] as const, { default: 'Ingress', description: 'block traffic from (Ingress) or to (Egress) the listed addresses' }),
  },
  { description: 'one allow-all-except-the-list NetworkPolicy per selected namespace' },
);

export type NetworkPolicyTarget = Static<typeof NetworkPolicyTarget>;

const IngressNginxTarget = Type.Object(
  {
    ingressSelector: Type.Optional(LabelSelector('Ingresses (in every namespace) whose denylist-source-range annotation gets the list')),
    global: Type.Optional(
      Type.Object(
        {
          configMap: Type.String({
            pattern: '^[a-z0-9]([-a-z0-9]*[a-z0-9])?/[a-z0-9]([-.a-z0-9]*[a-z0-9])?$',
            description: 'namespace/name of the ingress-nginx controller ConfigMap whose denylist-source-range gets the list',
          }),
        },
        { description: 'the global deny-list of an ingress-nginx controller' },
      ),
    ),
  },
  {
    description:
      'legacy: ingress-nginx deny-lists (per Ingress annotation or the global ConfigMap key), limited to 256 KiB of addresses; ingress-nginx is retired, prefer envoySecurityPolicy or istioAuthorizationPolicy',
    'x-kubernetes-validations': [{ rule: 'has(self.ingressSelector) != has(self.global)', message: 'set exactly one of ingressSelector and global' }],
  },
);

export type IngressNginxTarget = Static<typeof IngressNginxTarget>;

export const CONFIGMAP_FORMATS = ['txt', 'nginx', 'ipset', 'nftables'] as const;
export type ConfigMapFormat = (typeof CONFIGMAP_FORMATS)[number];

const ConfigMapTarget = Type.Object(
  {
    name: Type.String({
      pattern: '^[a-z0-9]([-.a-z0-9]*[a-z0-9])?$',
      maxLength: 240,
      description: 'ConfigMap name in the subscription namespace; lists over 1 MiB continue in ConfigMaps <name>-<key> labelled blockfeed.dev/configmap=<name>',
    }),
    formats: Type.Array(StringEnum(CONFIGMAP_FORMATS, { description: 'txt, nginx (deny x;), ipset (restore), nftables (set elements)' }), {
      minItems: 1,
      maxItems: 4,
      default: ['txt'],
      'x-kubernetes-list-type': 'set',
      description: 'one data key per format: list.txt, deny.conf, ipset.restore, nftables.conf',
    }),
  },
  { description: 'ConfigMaps holding the list in file formats for other tools' },
);

export type ConfigMapTarget = Static<typeof ConfigMapTarget>;

const NAMESPACE_NAME = '^[a-z0-9]([-a-z0-9]*[a-z0-9])?$';
const SECTION_NAME = '^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$';
const GROUP_NAME = '^$|^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$';

/**
 * How many CIDRs a target takes before it is Degraded (TargetTooLarge) instead of applying a list its
 * enforcement point would choke on; docs/controller.md says where each default comes from.
 */
const MaxCidrs = (defaults: number, maximum: number, why: string) =>
  Type.Integer({ minimum: 1, maximum, default: defaults, description: `apply at most this many CIDRs; a longer list leaves the target Degraded (TargetTooLarge) with what it held. ${why}` });

export const MAX_CIDRS = { envoySecurityPolicy: 10_000, istioAuthorizationPolicy: 10_000, ciliumCIDRGroup: 200_000, calicoGlobalNetworkSet: 500_000 } as const;

const EnvoySecurityPolicyTarget = Type.Object(
  {
    targetRefs: Type.Array(
      Type.Object(
        {
          group: Type.String({ default: 'gateway.networking.k8s.io', maxLength: 253, pattern: GROUP_NAME, description: 'API group of the target (Gateway API)' }),
          kind: StringEnum(['Gateway', 'ListenerSet', 'HTTPRoute', 'GRPCRoute', 'TCPRoute'] as const, { description: 'kind of the target' }),
          name: Type.String({ minLength: 1, maxLength: 253, description: 'name of the target' }),
          // '' rather than absent: every key of a list-map must be set, by the user or by a default.
          sectionName: Type.Optional(
            Type.String({ default: '', maxLength: 253, pattern: `^$|${SECTION_NAME}`, description: "a listener of a Gateway or a rule of a route; '' (the default): all of it" }),
          ),
          namespace: Type.Optional(
            Type.String({
              default: '',
              maxLength: 63,
              pattern: `^$|${NAMESPACE_NAME}`,
              description: "the target's namespace; '' (the default): the subscription's. A SecurityPolicy is written in each namespace named",
            }),
          ),
        },
        { description: 'a Gateway API object the SecurityPolicy attaches to' },
      ),
      {
        minItems: 1,
        maxItems: 16,
        // A list-map: the apiserver refuses a reference given twice (a CEL rule comparing every pair of entries
        // is over its cost budget).
        'x-kubernetes-list-type': 'map',
        'x-kubernetes-list-map-keys': ['group', 'kind', 'name', 'sectionName', 'namespace'],
        description: 'Gateways, listeners or routes whose clients are checked against the list; each at most once',
      },
    ),
    maxCIDRs: MaxCidrs(
      MAX_CIDRS.envoySecurityPolicy,
      40_000,
      'Envoy Gateway copies the list into the RBAC filter of every route it covers, so the proxy configuration grows with list size times routes; one SecurityPolicy per target holds it all (at most 1 MiB)',
    ),
  },
  {
    description:
      'an Envoy Gateway SecurityPolicy (gateway.envoyproxy.io/v1alpha1) per namespace of targetRefs: authorization defaultAction Allow with one Deny rule whose principal.clientCIDRs is the list. The client address is what ClientTrafficPolicy clientIPDetection (X-Forwarded-For, custom header) or proxyProtocol makes it',
  },
);
export type EnvoySecurityPolicyTarget = Static<typeof EnvoySecurityPolicyTarget>;

const IstioAuthorizationPolicyTarget = Type.Object(
  {
    namespace: Type.Optional(
      Type.String({
        minLength: 1,
        maxLength: 63,
        pattern: NAMESPACE_NAME,
        description: "namespace of the policies; default: the subscription's. Istio's root namespace (istio-system) makes them apply to the whole mesh",
      }),
    ),
    selector: Type.Optional(
      Type.Object(
        { matchLabels: StringMap('workload labels (e.g. istio: ingressgateway for a gateway, or a waypoint)') },
        { description: 'the workloads (sidecars, gateways) that enforce the policy; set this or targetRefs, or neither for every workload of the namespace' },
      ),
    ),
    targetRefs: Type.Optional(
      Type.Array(
        Type.Object(
          {
            group: Type.String({ maxLength: 253, pattern: GROUP_NAME, description: "API group: gateway.networking.k8s.io for a Gateway, '' for a Service, networking.istio.io for a ServiceEntry" }),
            kind: StringEnum(['Gateway', 'GatewayClass', 'Service', 'ServiceEntry'] as const, { description: 'kind of the target' }),
            name: Type.String({ minLength: 1, maxLength: 253, description: 'name of the target, in the policy namespace' }),
          },
          { description: 'an object the policy attaches to: a Gateway, or a Service or ServiceEntry through its waypoint (ambient)' },
        ),
        { minItems: 1, maxItems: 16, description: 'attach to Gateways, or in ambient mode to the waypoint of Services or ServiceEntries' },
      ),
    ),
    clientAddress: StringEnum(['RemoteIp', 'PeerIp'] as const, {
      default: 'RemoteIp',
      description:
        'RemoteIp: match the original client (source.remoteIpBlocks, from X-Forwarded-For or the PROXY protocol as the gateway trusts them: numTrustedProxies); PeerIp: match the connection peer (source.ipBlocks)',
    }),
    maxCIDRs: MaxCidrs(
      MAX_CIDRS.istioAuthorizationPolicy,
      1_000_000,
      'Istio turns each CIDR into an RBAC principal that Envoy checks one after the other, in every filter chain of every selected proxy; longer lists are cut into several DENY policies of at most 1 MiB',
    ),
  },
  {
    description: 'Istio AuthorizationPolicies (security.istio.io/v1, action DENY) holding the list; DENY policies add up, so a long list is cut into several',
    'x-kubernetes-validations': [{ rule: '!(has(self.selector) && has(self.targetRefs))', message: 'set selector or targetRefs, not both' }],
  },
);
export type IstioAuthorizationPolicyTarget = Static<typeof IstioAuthorizationPolicyTarget>;

const CiliumCIDRGroupTarget = Type.Object(
  {
    policy: Type.Object(
      {
        enabled: Type.Boolean({ default: true, description: 'write the policy; false: only the CIDR groups, for policies of your own (cidrGroupSelector on their labels)' }),
        endpointSelector: Type.Optional(LabelSelector('endpoints (pods) whose ingress from the list is denied')),
        nodeSelector: Type.Optional(LabelSelector("nodes (Cilium's host firewall) whose ingress from the list is denied")),
      },
      {
        default: { enabled: true },
        description:
          'a CiliumClusterwideNetworkPolicy denying ingress from the groups (ingressDeny, fromCIDRSet, cidrGroupSelector), with default deny off so that it blocks nothing else; endpointSelector (default: every endpoint) or nodeSelector',
        'x-kubernetes-validations': [{ rule: '!(has(self.endpointSelector) && has(self.nodeSelector))', message: 'set endpointSelector or nodeSelector, not both' }],
      },
    ),
    maxCIDRs: MaxCidrs(
      MAX_CIDRS.ciliumCIDRGroup,
      10_000_000,
      "Each CIDR is an entry of every node's IP cache map (512k entries by default, shared with every endpoint of the cluster); the list is cut into CiliumCIDRGroups of at most 1 MiB",
    ),
  },
  { description: 'CiliumCIDRGroups (cilium.io/v2, cluster-scoped) holding the list, and by default a CiliumClusterwideNetworkPolicy denying ingress from them' },
);
export type CiliumCIDRGroupTarget = Static<typeof CiliumCIDRGroupTarget>;

const CalicoGlobalNetworkSetTarget = Type.Object(
  {
    policy: Type.Object(
      {
        enabled: Type.Boolean({ default: true, description: 'write the policy; false: only the network sets, for policies of your own (select them by the labels they carry)' }),
        order: Type.Integer({ minimum: 0, maximum: 1_000_000, default: 10, description: 'order of the policy among pre-DNAT policies (lower first)' }),
        selector: Type.String({
          minLength: 1,
          maxLength: 1024,
          default: 'all()',
          description: 'Calico selector of the host endpoints the policy protects (a pre-DNAT policy applies to host endpoints only)',
        }),
      },
      {
        default: { enabled: true, order: 10, selector: 'all()' },
        description:
          'a pre-DNAT GlobalNetworkPolicy on host endpoints with a Deny ingress rule whose source selects the sets: it drops listed clients as they enter a node, before any DNAT, and (pre-DNAT) leaves all other traffic to the policies that follow; while the cluster has no HostEndpoint it applies to nothing, and the target is Degraded (TargetNotFound)',
      },
    ),
    maxCIDRs: MaxCidrs(
      MAX_CIDRS.calicoGlobalNetworkSet,
      1_048_576,
      "Felix puts the sets a selector matches into one IP set (maxIpsetSize 1,048,576 by default; the eBPF dataplane's IP-set map of that size is shared by all sets); the list is cut into GlobalNetworkSets of at most 1 MiB",
    ),
  },
  {
    description:
      'Calico GlobalNetworkSets (crd.projectcalico.org/v1, the CRDs a cluster without the Calico API server serves) labelled per subscription, and by default a GlobalNetworkPolicy denying ingress from them',
  },
);
export type CalicoGlobalNetworkSetTarget = Static<typeof CalicoGlobalNetworkSetTarget>;

/** One schema per kind of target, under its field in spec.targets[]; targets/index.ts has their code. */
const TARGET_PROPERTIES = {
  networkPolicy: Type.Optional(NetworkPolicyTarget),
  ingressNginx: Type.Optional(IngressNginxTarget),
  configMap: Type.Optional(ConfigMapTarget),
  envoySecurityPolicy: Type.Optional(EnvoySecurityPolicyTarget),
  istioAuthorizationPolicy: Type.Optional(IstioAuthorizationPolicyTarget),
  ciliumCIDRGroup: Type.Optional(CiliumCIDRGroupTarget),
  calicoGlobalNetworkSet: Type.Optional(CalicoGlobalNetworkSetTarget),
};
export const TARGET_FIELDS = Object.keys(TARGET_PROPERTIES) as (keyof typeof TARGET_PROPERTIES)[];

const Target = Type.Object(
  TARGET_PROPERTIES,
  {
    description: `one place the list is applied; set exactly one of ${TARGET_FIELDS.join(', ')}`,
    'x-kubernetes-validations': [
      {
        rule: `[${TARGET_FIELDS.map((f) => `has(self.${f})`).join(', ')}].filter(x, x).size() == 1`,
        message: `set exactly one of ${TARGET_FIELDS.join(', ')}`,
      },
    ],
  },
);

/**
 * Targets of one kind would write the same objects: one of each per subscription, except configMap, whose
 * targets are told apart by name.
 */
function targetRules(): CelRule[] {
  return [
    ...TARGET_FIELDS.filter((f) => f !== 'configMap').map((f) => ({
      rule: `self.filter(t, has(t.${f})).size() <= 1`,
      message: `at most one ${f} target per subscription`,
    })),
    {
      rule: 'self.filter(t, has(t.configMap)).all(a, self.filter(b, has(b.configMap) && b.configMap.name == a.configMap.name).size() == 1)',
      message: 'configMap targets need distinct names',
    },
  ];
}

export const MIN_INTERVAL_SECONDS = 300;

export const BlocklistSubscriptionSpec = Type.Object(
  {
    feed: Feed,
    schedule: Type.Optional(
      Type.String({
        minLength: 9,
        maxLength: 100,
        description: 'cron expression (5 fields, UTC) of when to sync; default: daily between 03:00 and 05:00 at a time fixed per subscription',
      }),
    ),
    interval: Type.Optional(
      Type.String({
        pattern: '^([0-9]+h)?([0-9]+m)?([0-9]+s)?$',
        maxLength: 20,
        minLength: 2,
        description: 'sync every this long (Go duration such as 6h or 90m, at least 5m); excludes schedule',
      }),
    ),
    suspend: Type.Optional(Type.Boolean({ default: false, description: 'stop syncing and repairing; what was applied stays in force' })),
    allowlist: Type.Optional(
      Type.Array(
        Type.String({
          maxLength: 43,
          description: 'an address or CIDR',
          'x-kubernetes-validations': [{ rule: 'isCIDR(self) || isIP(self)', message: 'must be an IP address or a CIDR such as 198.51.100.0/24' }],
        }),
        { maxItems: 10_000, description: 'addresses never blocked; wins over the feed and punches holes in wider entries' },
      ),
    ),
    safety: Safety,
    targets: Type.Array(Target, { minItems: 1, maxItems: 32, description: 'where to apply the list', 'x-kubernetes-validations': targetRules() }),
  },
  {
    description: 'which list to pull, how often, and where to apply it',
    'x-kubernetes-validations': [
      { rule: '!(has(self.schedule) && has(self.interval))', message: 'set schedule or interval, not both' },
      {
        rule: `!has(self.interval) || duration(self.interval) >= duration('${MIN_INTERVAL_SECONDS / 60}m')`,
        message: `interval must be at least ${MIN_INTERVAL_SECONDS / 60}m`,
        fieldPath: '.interval',
      },
    ],
  },
);
export type BlocklistSubscriptionSpec = Static<typeof BlocklistSubscriptionSpec>;

const Condition = Type.Object(
  {
    type: Type.String({ maxLength: 316, description: 'Ready, Synced, Degraded or Live' }),
    status: StringEnum(['True', 'False', 'Unknown'] as const, { description: 'status of the condition' }),
    reason: Type.String({ maxLength: 1024, description: 'one CamelCase word saying why' }),
    message: Type.String({ maxLength: 32768, description: 'human-readable details' }),
    lastTransitionTime: Type.String({ format: 'date-time', description: 'when status last changed' }),
    observedGeneration: Type.Optional(Type.Integer({ minimum: 0, description: 'metadata.generation this condition was set for' })),
  },
  { description: 'a condition in the form of the Kubernetes API conventions' },
);
export type Condition = Static<typeof Condition>;

const TargetObject = Type.Object(
  {
    kind: Type.String({ description: 'kind of the object, e.g. NetworkPolicy, ConfigMap, CiliumCIDRGroup' }),
    namespace: Type.Optional(Type.String({ description: 'namespace of the object (none for a cluster-scoped one)' })),
    name: Type.String({ description: 'name of the object' }),
    cidrs: Type.Integer({ minimum: 0, description: 'CIDRs it holds' }),
  },
  { description: 'an object holding (part of) the list' },
);
export type TargetObject = Static<typeof TargetObject>;

const TargetStatus = Type.Object(
  {
    target: Type.String({ description: 'the kind of target: its field in spec.targets[]' }),
    state: StringEnum(['Applied', 'Degraded'] as const, { description: 'Applied: its objects hold the list; Degraded: they could not take it and what they held stays, or (TargetNotEnforced) the enforcement point does not enforce them, or (TargetUnsafe) one is not written, as the enforcement point would block more than the list' }),
    reason: Type.Optional(Type.String({ description: 'why it is Degraded: TargetTooLarge (the last list stays in force), TargetNotInstalled, TargetNotFound, TargetConflict, TargetNotEnforced, TargetUnsafe (not written: the enforcement point would block more than the list)' })),
    message: Type.Optional(Type.String({ description: 'details of what is wrong' })),
    cidrs: Type.Integer({ minimum: 0, description: 'CIDRs of the list it holds' }),
    objects: Type.Array(TargetObject, { description: 'the objects holding the list' }),
  },
  { description: 'what one target of spec.targets holds' },
);
export type TargetStatus = Static<typeof TargetStatus>;

export const BlocklistSubscriptionStatus = Type.Object(
  {
    observedGeneration: Type.Optional(Type.Integer({ minimum: 0, description: 'metadata.generation last reconciled' })),
    conditions: Type.Optional(
      Type.Array(Condition, {
        'x-kubernetes-list-type': 'map',
        'x-kubernetes-list-map-keys': ['type'],
        description:
          'Ready (the list is in force), Synced (the last sync succeeded), Degraded (something needs attention), Live (with spec.feed.live: whether the long poll on the feed is open)',
      }),
    ),
    entries: Type.Optional(Type.Integer({ minimum: 0, description: 'addresses and ranges in the applied list, after sanitising' })),
    cidrs: Type.Optional(Type.Integer({ minimum: 0, description: 'CIDRs in the applied list after aggregation' })),
    lastSyncTime: Type.Optional(
      Type.String({ format: 'date-time', description: 'when the last sync attempt ended; a sync that changes nothing refreshes it at most hourly (metrics have every sync)' }),
    ),
    lastSuccessfulSyncTime: Type.Optional(
      Type.String({
        format: 'date-time',
        description: 'when a sync last succeeded, at most an hour behind (blockfeed_last_success_timestamp_seconds is exact)',
      }),
    ),
    nextSyncTime: Type.Optional(Type.String({ format: 'date-time', description: 'when the next scheduled sync runs' })),
    feedETag: Type.Optional(Type.String({ description: 'ETag of the applied feed body, sent as If-None-Match' })),
    lastHandledReconcileAt: Type.Optional(
      Type.String({ description: 'the value of the reconcile.fluxcd.io/requestedAt annotation the last sync was asked for with' }),
    ),
    listHash: Type.Optional(Type.String({ description: 'SHA-256 of the applied aggregated list' })),
    targets: Type.Optional(Type.Array(TargetStatus, { description: 'per target of spec.targets: what it holds, and why not when Degraded' })),
    message: Type.Optional(Type.String({ description: 'summary of the last sync' })),
  },
  { description: 'what the controller last did' },
);
export type BlocklistSubscriptionStatus = Static<typeof BlocklistSubscriptionStatus>;

export interface BlocklistSubscription {
  apiVersion: typeof API_VERSION;
  kind: typeof KIND;
  metadata: {
    name: string;
    namespace: string;
    uid?: string;
    generation?: number;
    resourceVersion?: string;
    annotations?: Record<string, string>;
    labels?: Record<string, string>;
    finalizers?: string[];
    deletionTimestamp?: Date;
  };
  spec: BlocklistSubscriptionSpec;
  status?: BlocklistSubscriptionStatus;
}

/** The CRD object (apiextensions.k8s.io/v1) as checked in under crds/. */
export function customResourceDefinition(): Record<string, unknown> {
  const plain = (schema: TSchema): unknown => JSON.parse(JSON.stringify(schema));
  return {
    apiVersion: 'apiextensions.k8s.io/v1',
    kind: 'CustomResourceDefinition',
    metadata: { name: `${PLURAL}.${GROUP}` },
    spec: {
      group: GROUP,
      names: { kind: KIND, listKind: `${KIND}List`, plural: PLURAL, singular: 'blocklistsubscription', shortNames: ['bls'], categories: ['blockfeed'] },
      scope: 'Namespaced',
      versions: [
        {
          name: VERSION,
          served: true,
          storage: true,
          subresources: { status: {} },
          additionalPrinterColumns: [
            { name: 'Endpoint', type: 'string', jsonPath: '.spec.feed.endpoint' },
            { name: 'Entries', type: 'integer', jsonPath: '.status.entries' },
            { name: 'Ready', type: 'string', jsonPath: '.status.conditions[?(@.type=="Ready")].status' },
            { name: 'Last Sync', type: 'date', jsonPath: '.status.lastSuccessfulSyncTime' },
            { name: 'Live', type: 'string', jsonPath: '.status.conditions[?(@.type=="Live")].status', priority: 1 },
            { name: 'Age', type: 'date', jsonPath: '.metadata.creationTimestamp' },
          ],
          schema: {
            openAPIV3Schema: {
              type: 'object',
              description: 'BlocklistSubscription pulls an attacker blocklist from a blockfeed api-server and applies it to NetworkPolicies, Envoy Gateway SecurityPolicies, Istio AuthorizationPolicies, Cilium CIDR groups, Calico network sets, ConfigMaps and (legacy) ingress-nginx deny-lists.',
              required: ['spec'],
              properties: {
                apiVersion: { type: 'string', description: 'versioned schema of this object' },
                kind: { type: 'string', description: 'REST resource this object represents' },
                metadata: { type: 'object' },
                spec: plain(BlocklistSubscriptionSpec),
                status: plain(BlocklistSubscriptionStatus),
              },
            },
          },
        },
      ],
    },
  };
}
