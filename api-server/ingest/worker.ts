// The ingest worker thread: its heap, and an early start. bin/cli.ts starts the worker as soon as it sees the
// command, so that the worker boots and loads its own modules (~0.2 s) while the main thread loads the CLI and
// reads the arguments, on the other core. The main thread then sends the job, and the configuration a few
// milliseconds later, while the worker begins to parse (cli.ts, run.ts).
// Kept to node's own modules: it is loaded before everything else.
import { setFlagsFromString } from 'node:v8';
import { Worker } from 'node:worker_threads';

/**
 * The ingest worker's heap: room for the modules and three batches in flight (bench/ingest.ts peaks at
 * 248–265 MB RSS for the whole process). The young generation is the parse loop's nursery; with the
 * byte-level reader little of what it allocates survives, and 8–64 MB made no measurable difference.
 */
const INGEST_HEAP_LIMITS = { maxYoungGenerationSizeMb: 24, maxOldGenerationSizeMb: 256 };
// The old generation starts at 64 MB instead of growing from a few: a million-line ingest then runs a handful
// of full collections instead of ~18 (their concurrent marking cost ~0.3 s of CPU; 128 MB saves a little more
// but brings the peak RSS within 10 MB of the 300 MB budget).
const INITIAL_OLD_SPACE_MB = 64;

let early: { worker: Worker; stdin: boolean } | undefined;

function startWorker(stdin: boolean): Worker {
  // V8 reads heap flags when an isolate is made, so this reaches the worker, not the thread running here.
  setFlagsFromString(`--initial-old-space-size=${INITIAL_OLD_SPACE_MB}`);
  return new Worker(new URL('./run.ts', import.meta.url), { stdin, resourceLimits: INGEST_HEAP_LIMITS });
}

/** Whether `blockfeed ingest <args>` reads standard input: no file named, or `-` among them. */
function readsStdin(args: readonly string[]): boolean {
  const withValue = new Set(['-f', '--format', '-s', '--sensor', '--batch-size']);
  let files = 0;
  for (let i = 0; i < args.length; i++) {
    const a = args[i] as string;
    if (a === '-') return true;
    if (withValue.has(a)) i++;
    else if (!a.startsWith('-')) files++;
  }
  return files === 0;
}

/**
 * Starts the worker ahead of the CLI (bin/cli.ts) for `ingest <args>`. It waits for its job; if the command
 * never gets that far (bad arguments, --help) it does not keep the process alive.
 */
export function startIngestWorkerEarly(args: readonly string[]): void {
  const stdin = readsStdin(args);
  early = { worker: startWorker(stdin), stdin };
  early.worker.unref();
}

/** The worker started early, when it suits (standard input as needed), else a new one. */
export function ingestWorker(stdin: boolean): Worker {
  const started = early;
  early = undefined;
  if (started?.stdin === stdin) {
    started.worker.ref();
    return started.worker;
  }
  void started?.worker.terminate();
  return startWorker(stdin);
}
