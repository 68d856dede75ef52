// The YAML parser, loaded on first use. Most commands read no YAML: the configuration file is optional and
// the curated data/ files are read only to rebuild the enrichment snapshot. The parser is 72 modules (~25 ms
// to load), and `ingest` in particular starts sooner without it, in the main thread and in its worker.
// Loaded through `require` (its synchronous loader) so that callers stay synchronous; every caller shares the
// one copy.
import { createRequire } from 'node:module';
import type * as Yaml from 'yaml';

let loaded: typeof Yaml | undefined;

/** Parses one YAML document (see the yaml package's `parse`). */
export function parseYaml(text: string): unknown {
  loaded ??= createRequire(import.meta.url)('yaml') as typeof Yaml;
  return loaded.parse(text);
}
