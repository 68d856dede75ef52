// Which way imports may run (docs/design.md "Which way imports run"), checked by dependency-cruiser in `make lint`: an
// import the wrong way fails CI. Type-only imports count: a type is a dependency like any other. Tests,
// benchmarks, scripts and the launcher (bin/) may import anything: there only cycles and imports that do
// not resolve are refused.
//
// The api-server's folders, each with the folders it may import besides its own, common/ and the
// foundation modules (config.ts, schema-text.ts). Anything not listed is refused.

/** The layers, only downward: store ← query ← render ← http, website. */
const LAYERS = {
  store: [],
  query: ['store'],
  render: ['query', 'store'],
  http: ['render', 'query', 'store', 'keys', 'ingest', 'enrich', 'exclusions'],
  website: ['render', 'query', 'store', 'keys', 'members', 'exclusions'],
};

/**
 * The features, beside the layers: domain modules over the store, each with its commands (cli.ts, which
 * use cli-context.ts). The HTTP surfaces (http, website) use them; they use no layer above the store.
 */
const FEATURES = {
  classify: [],
  enrich: ['store'],
  ingest: ['classify', 'enrich', 'store'],
  keys: ['store'],
  members: ['keys', 'store'],
  exclusions: ['members', 'store'],
  retention: ['ingest', 'store'],
  demo: ['classify', 'enrich', 'ingest'],
};

/** Importable from every api-server folder: settings and the wording of schemas, which import only common/. */
const FOUNDATION = '^api-server/(config|schema-text)[.]ts$';
/** The commands' plumbing (configuration, logger, a migrated store). */
const CLI_CONTEXT = '^api-server/cli-context[.]ts$';
/** The composition roots: they import the layers; nothing in the api-server imports them but each other. */
const COMPOSITION = '^api-server/(app|serve|cli)[.]ts$';
/** The CRD contract both programs may use, at the top level as kubebuilder has it. */
const CRD_CONTRACT = '^api/';

/**
 * @param {string} folder
 * @param {string[]} allowed
 * @param {string[]} extra further modules it may import
 */
function folderRule(folder, allowed, extra) {
  return {
    name: `api-server-${folder}`,
    comment: `api-server/${folder}/ may import ${allowed.length ? allowed.map((f) => `${f}/`).join(', ') : 'no other folder'} of the api-server (besides the foundation and common/)`,
    severity: 'error',
    from: { path: `^api-server/${folder}/` },
    to: { path: '^api-server/', pathNot: [`^api-server/(${[folder, ...allowed].join('|')})/`, FOUNDATION, ...extra] },
  };
}

const folderRules = [
  ...Object.entries(LAYERS).map(([folder, allowed]) => folderRule(folder, allowed, [])),
  ...Object.entries(FEATURES).map(([folder, allowed]) => folderRule(folder, allowed, [CLI_CONTEXT])),
];

export default {
  forbidden: [
    {
      name: 'no-circular',
      comment: 'No module reaches itself through its imports, anywhere in the package.',
      severity: 'error',
      from: {},
      to: { circular: true },
    },
    {
      name: 'not-to-unresolvable',
      comment: 'An import that does not resolve could not be checked against these rules.',
      severity: 'error',
      from: { pathNot: '^node_modules/' },
      to: { couldNotResolve: true },
    },
    {
      name: 'common-is-shared',
      comment: 'common/ is what both programs use: it imports nothing of either, nor of the CRD contract.',
      severity: 'error',
      from: { path: '^common/' },
      to: { path: '^(api-server|controller|api|bin|shipper|test|bench|scripts|hack)/' },
    },
    {
      name: 'crd-contract-stands-alone',
      comment: 'The CRD contract (TypeBox) imports only common/: both programs read it.',
      severity: 'error',
      from: { path: CRD_CONTRACT },
      to: { path: '^(api-server|controller|bin|test|bench|scripts|hack)/', pathNot: CRD_CONTRACT },
    },
    {
      name: 'api-server-not-controller',
      comment: 'The api-server shares only common/ and the CRD contract with the controller; they talk over HTTP.',
      severity: 'error',
      from: { path: '^api-server/' },
      to: { path: '^(controller|bin)/', pathNot: CRD_CONTRACT },
    },
    {
      name: 'controller-not-api-server',
      comment: 'The controller shares only common/ and the CRD contract with the api-server; it pulls any compatible feed.',
      severity: 'error',
      from: { path: '^controller/' },
      to: { path: '^(api-server|bin)/' },
    },
    {
      name: 'shipper-carries-no-server-code',
      comment: 'The shipper runs on sensors next to the attackers: it imports only common/.',
      severity: 'error',
      from: { path: '^shipper/' },
      to: { path: '^(api-server|controller|api|bin)/' },
    },
    {
      name: 'programs-not-shipper',
      comment: 'No other program imports the shipper; they talk over HTTP.',
      severity: 'error',
      from: { path: '^(api-server|controller|api|common)/' },
      to: { path: '^shipper/' },
    },
    {
      name: 'programs-not-outside',
      comment: 'Neither program imports tests, benchmarks or developer tooling.',
      severity: 'error',
      from: { path: '^(api-server|controller|common|api|bin|shipper)/' },
      to: { path: '^(test|bench|scripts|hack)/' },
    },
    {
      name: 'bin-enters-controller-by-its-cli',
      comment: 'The launcher knows the controller only by the commands it registers.',
      severity: 'error',
      from: { path: '^bin/' },
      to: { path: '^controller/', pathNot: '^controller/cli[.]ts$' },
    },
    {
      name: 'controller-runtime-not-domain',
      comment: 'The controller\'s runtime (client, object writes, ledger, drift watch, queue, leader election) knows nothing of subscriptions\' domain: it takes what it needs as parameters.',
      severity: 'error',
      from: { path: '^controller/runtime/' },
      to: { path: '^controller/', pathNot: '^controller/runtime/' },
    },
    {
      name: 'controller-targets-not-loop',
      comment: 'Enforcement points are written by the loop, never the other way round.',
      severity: 'error',
      from: { path: '^controller/targets/' },
      to: { path: '^controller/(cli|run|controller|reconcile|rbac|metrics)[.]ts$' },
    },
    {
      name: 'controller-stages-pure',
      comment: 'The pure stages (cidr, safety, feed, schedule) use neither the runtime nor the targets.',
      severity: 'error',
      from: { path: '^controller/(cidr|safety|feed|schedule)[.]ts$' },
      to: { path: '^controller/(runtime|targets)/' },
    },
    {
      name: 'api-server-foundation',
      comment: 'config.ts and schema-text.ts sit below every layer: they import only each other and common/.',
      severity: 'error',
      from: { path: FOUNDATION },
      to: { path: '^api-server/', pathNot: FOUNDATION },
    },
    {
      name: 'api-server-cli-context',
      comment: 'The commands\' plumbing opens the store and reads the configuration, nothing above them.',
      severity: 'error',
      from: { path: CLI_CONTEXT },
      to: { path: '^api-server/', pathNot: [FOUNDATION, '^api-server/store/'] },
    },
    {
      name: 'api-server-composition-on-top',
      comment: 'Nothing in the api-server imports its composition roots (app.ts, serve.ts, cli.ts) but they themselves.',
      severity: 'error',
      from: { path: '^api-server/', pathNot: COMPOSITION },
      to: { path: COMPOSITION },
    },
    ...folderRules,
  ],
  options: {
    // The package's own modules; dependencies are resolved (so that an import that does not resolve is
    // reported) but not cruised further. The website's browser script is not part of either program.
    exclude: { path: ['^[.]cache/', '^api-server/website/static/'] },
    doNotFollow: { path: '^node_modules/' },
    // Type-only imports are dependencies too (a feature importing a layer's type depends on that layer).
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
    // Dependencies with an `exports` map (typebox/compile, ...) resolve as Node resolves them.
    enhancedResolveOptions: { exportsFields: ['exports'], conditionNames: ['import', 'require', 'node', 'default', 'types'], mainFields: ['module', 'main', 'types'] },
    reporterOptions: { text: { highlightFocused: true } },
  },
};
