import { describe, expect, it } from 'vitest';
import { emptyStats } from '../../../../api-server/ingest/pipeline.ts';
import { renderBar } from '../../../../api-server/ingest/progress.ts';

describe('renderBar', () => {
  const stats = { ...emptyStats(), lines: 250_000, inserted: 240_000, rejected: 12, bytes: 25_000_000 };

  it('shows the share of bytes read, counts and rate when the total is known', () => {
    const bar = renderBar(stats, 10_000, 120, 100_000_000);
    expect(bar).toMatch(/^\[#{5,}\.+\] {2}25% 250,000 lines, 240,000 new, 12 rejected, 25,000\/s$/);
    expect(bar.length).toBeLessThan(120);
  });

  it('shows counts only when reading a stream of unknown length, and fits narrow terminals', () => {
    expect(renderBar(stats, 10_000, 200)).toBe('ingesting… 250,000 lines, 240,000 new, 12 rejected, 25,000/s');
    expect(renderBar(stats, 10_000, 40, 100_000_000).length).toBeLessThanOrEqual(39);
  });
});
