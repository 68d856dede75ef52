import { describe, expect, it } from 'vitest';
import { loadMigrations, orderMigrations } from '../../../../api-server/store/migrate.ts';

describe('orderMigrations', () => {
  it('orders by number and ignores non-SQL files', () => {
    const list = orderMigrations([
      { file: '0002_b.sql', sql: 'b' },
      { file: 'README.md', sql: '' },
      { file: '0001_a.sql', sql: 'a' },
    ]);
    expect(list.map((m) => [m.version, m.name])).toEqual([
      [1, 'a'],
      [2, 'b'],
    ]);
  });

  it('rejects gaps and badly named files', () => {
    expect(() => orderMigrations([{ file: '0002_b.sql', sql: '' }])).toThrow(/without gaps/);
    expect(() => orderMigrations([{ file: '1_a.sql', sql: '' }])).toThrow(/0001_name\.sql/);
  });

  it('the shipped migrations are well formed', async () => {
    const list = await loadMigrations();
    expect(list.length).toBeGreaterThan(0);
    expect(list[0]?.version).toBe(1);
  });
});
