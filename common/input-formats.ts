// The sensor log formats blockfeed reads: `blockfeed ingest --format`, POST /internal/v1/events?format= and
// `blockfeed ship --format` all take these names.
export const INPUT_FORMATS = ['native', 'cowrie', 'opencanary', 'telescope-csv'] as const;
export type InputFormat = (typeof INPUT_FORMATS)[number];
