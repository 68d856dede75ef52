// The demo's defaults, apart from the generator so that the CLI can show them without loading it.
export const DEMO_DEFAULTS = { events: 200_000, days: 14, seed: 1 } as const;
