// What a database URL looks like in messages: where it points and as whom, never its password.
import { describe, expect, it } from 'vitest';
import { describeDatabaseUrl, withDatabase } from '../../../../api-server/store/database.ts';

describe('describeDatabaseUrl', () => {
  it('names host, port, database and user without the password', () => {
    const text = describeDatabaseUrl('postgresql://ingest%40corp:s3cr%3Dt-pw@db.internal:6543/blockfeed?sslmode=require');
    expect(text).toBe('db.internal:6543/blockfeed as ingest@corp');
    expect(text).not.toContain('s3cr');
  });

  it('fills in the default port and says when no user is named', () => {
    expect(describeDatabaseUrl('postgres://db/x')).toBe('db:5432/x as the default user');
  });

  it('describes the URL withDatabase makes', () => {
    expect(describeDatabaseUrl(withDatabase('postgresql://u:p@127.0.0.1:5432/postgres', 'blockfeed'))).toBe('127.0.0.1:5432/blockfeed as u');
  });
});
