import { sql, type Kysely } from 'kysely';

/**
 * How a PrusaLink printer authenticates: 'digest' or 'api_key' (X-Api-Key of
 * older firmware); NULL means Digest. Chosen by configuration, never learnt
 * from a 401, so the password is never sent in clear as a fallback.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`ALTER TABLE printers ADD COLUMN auth_method TEXT CHECK (auth_method IN ('digest', 'api_key'))`.execute(db);
}
