// The time an address takes from an attacker's event to a block, cut into stages: each trial is a list of
// named instants in the order they happen (pushed, acknowledged, notified, ...), and a stage is the time from one
// mark to the next, named by the later one. A measurement that follows the path further (the cluster tier's
// whole loop: the enforcer's rules, the first refused packet) appends marks of its own to the same trials and
// gets the same table, with its stages after these.
import { median } from './harness.ts';

/** One trial: instants (ms since the epoch, one clock) in the order they happen. */
export interface Trial {
  marks: [name: string, at: number][];
}

export interface StageFigures {
  /** The later mark's name: the stage ends when it happens. */
  stage: string;
  median: number;
  p90: number;
  max: number;
}

function percentile(values: number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)] ?? 0;
}

/** Per stage (between consecutive marks) and for the whole (first mark to last): median, p90, max in ms. */
export function summarise(trials: readonly Trial[]): StageFigures[] {
  const first = trials[0];
  if (!first) return [];
  const names = first.marks.map(([name]) => name);
  for (const t of trials) {
    if (t.marks.map(([name]) => name).join() !== names.join()) throw new Error(`trials disagree on their marks: ${names.join()} / ${t.marks.map(([n]) => n).join()}`);
  }
  const figures = (stage: string, values: number[]): StageFigures => ({ stage, median: median(values), p90: percentile(values, 90), max: Math.max(...values) });
  const stages = names.slice(1).map((name, i) => figures(name, trials.map((t) => t.marks[i + 1]![1] - t.marks[i]![1])));
  const total = figures(`total (${names[0]} → ${names.at(-1)})`, trials.map((t) => t.marks.at(-1)![1] - t.marks[0]![1]));
  return [...stages, total];
}

/** The table as text, and one JSON line a script can read (`{"bench": name, "runs", "stages": [...]}`). */
export function report(name: string, trials: readonly Trial[], describe: Record<string, string> = {}): string {
  const rows = summarise(trials);
  const width = Math.max(...rows.map((r) => r.stage.length), 5);
  const ms = (v: number) => `${v.toFixed(0).padStart(7)} ms`;
  const lines = [
    `${'stage'.padEnd(width)}  ${'median'.padStart(10)}  ${'p90'.padStart(10)}  ${'max'.padStart(10)}  what`,
    ...rows.map((r) => `${r.stage.padEnd(width)}  ${ms(r.median)}  ${ms(r.p90)}  ${ms(r.max)}  ${describe[r.stage] ?? ''}`),
  ];
  return `${lines.join('\n')}\n${JSON.stringify({ bench: name, runs: trials.length, stages: rows })}\n`;
}
