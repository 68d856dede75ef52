// One transaction on a connection of its own: committed when the work resolves, rolled back when it throws.
import type pg from 'pg';

export async function inTransaction<T>(pool: pg.Pool, work: (client: pg.PoolClient) => Promise<T>): Promise<T> {
  const client = await pool.connect();
  try {
    await client.query('begin');
    const result = await work(client);
    await client.query('commit');
    return result;
  } catch (err) {
    // A rollback that fails (the connection is gone) must not hide the error that caused it.
    await client.query('rollback').catch(() => undefined);
    throw err;
  } finally {
    client.release();
  }
}
