// Progress of a long ingest: a one-line bar on stderr when stderr is a terminal, periodic log lines
// otherwise (CI, files, journald). Knows the total only when every input is a regular file.
import type { Logger } from '../../common/logging.ts';
import type { IngestStats } from './pipeline.ts';

export interface Progress {
  update(stats: IngestStats): void;
  done(stats: IngestStats): void;
}

export interface ProgressOptions {
  out: NodeJS.WriteStream;
  log: Logger;
  totalBytes?: number;
  /** ms between log lines when not on a terminal */
  logEvery?: number;
  now?: () => number;
}

const fmt = (n: number) => Math.round(n).toLocaleString('en-US');

/** The bar's text for a terminal `width` columns wide. Pure (exported for tests). */
export function renderBar(stats: IngestStats, elapsedMs: number, width: number, totalBytes?: number): string {
  const rate = elapsedMs > 0 ? (stats.lines * 1000) / elapsedMs : 0;
  const tail = ` ${fmt(stats.lines)} lines, ${fmt(stats.inserted)} new, ${fmt(stats.rejected)} rejected, ${fmt(rate)}/s`;
  if (!totalBytes) return `ingesting…${tail}`.slice(0, width - 1);
  const fraction = Math.min(1, stats.bytes / totalBytes);
  const pct = `${String(Math.floor(fraction * 100)).padStart(3)}%`;
  const room = Math.max(10, Math.min(40, width - tail.length - pct.length - 4));
  const filled = Math.round(fraction * room);
  return `[${'#'.repeat(filled)}${'.'.repeat(room - filled)}] ${pct}${tail}`.slice(0, width - 1);
}

export function createProgress({ out, log, totalBytes, logEvery = 5000, now = Date.now }: ProgressOptions): Progress {
  const started = now();
  let last = started;
  if (out.isTTY) {
    return {
      update(stats) {
        const t = now();
        if (t - last < 100) return;
        last = t;
        out.write(`\r${renderBar(stats, t - started, out.columns || 80, totalBytes)}`);
      },
      done(stats) {
        out.write(`\r${renderBar(stats, now() - started, out.columns || 80, totalBytes)}\n`);
      },
    };
  }
  return {
    update(stats) {
      const t = now();
      if (t - last < logEvery) return;
      last = t;
      const percent = totalBytes ? Math.floor((stats.bytes / totalBytes) * 100) : undefined;
      log.info({ lines: stats.lines, inserted: stats.inserted, rejected: stats.rejected, percent }, 'ingest progress');
    },
    done() {},
  };
}
