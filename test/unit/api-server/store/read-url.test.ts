// The standbys' URL (DATABASE_READ_URL) takes what it leaves out from the primary's: the credentials exactly
// as DATABASE_URL encodes them, and the database name.
import pg from 'pg';
import { describe, expect, it } from 'vitest';
import { completeReadUrl } from '../../../../api-server/store/database.ts';

const PRIMARY = 'postgresql://blockfeed:p%40ss%3Aw%2Fo%25rd%20%23x@blockfeed-postgresql-rw.ns:5432/blockfeed?sslmode=verify-full&sslrootcert=/ca/ca.crt';

describe('completeReadUrl', () => {
  it("fills a read URL without credentials or database from the primary's, keeping its own host and parameters", () => {
    const read = completeReadUrl('postgresql://blockfeed-postgresql-ro.ns:5432?sslmode=verify-full&sslrootcert=/ca/ca.crt', PRIMARY);
    expect(read).toBe('postgresql://blockfeed:p%40ss%3Aw%2Fo%25rd%20%23x@blockfeed-postgresql-ro.ns:5432/blockfeed?sslmode=verify-full&sslrootcert=/ca/ca.crt');
    // node-postgres reads from it the password the primary's URL holds, every odd character intact.
    const parsed = new pg.Client({ connectionString: read.split('?')[0] }); // (sslrootcert would be read at once)
    expect([parsed.user, parsed.password, parsed.host, parsed.database]).toEqual(['blockfeed', 'p@ss:w/o%rd #x', 'blockfeed-postgresql-ro.ns', 'blockfeed']);
  });

  it("keeps the read URL's own user, password and database when it has them", () => {
    expect(completeReadUrl('postgres://reader:secret@replica:6432/reports', PRIMARY)).toBe('postgres://reader:secret@replica:6432/reports');
  });

  it("takes only the database when the read URL names its user", () => {
    expect(completeReadUrl('postgres://reader@replica/', PRIMARY)).toBe('postgres://reader@replica/blockfeed');
  });
});
