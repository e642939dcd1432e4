import type { Db } from '../connection';

/** The file catalog (printer and local files). */
export class FilesRepository {
  constructor(private readonly db: Db) {}

  async count(): Promise<number> {
    const row = await this.db.selectFrom('files').select((eb) => eb.fn.countAll<number>().as('n')).executeTakeFirstOrThrow();
    return Number(row.n);
  }
}
