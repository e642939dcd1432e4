/**
 * Senders choose their versions, deployment modes, printer types and printer counts, so /stats/versions,
 * /stats/deployment-modes, /stats/printers and /stats/version-migration count them in SQL and list the 50
 * largest only, with what the rest add up to (as the error and feature views, aggregator-bounded-views).
 */
import { randomUUID } from 'node:crypto';
import { HOUR_MS } from '../../service/aggregator/repository';
import { TOP_NAMES } from '../../service/aggregator/stats';
import { describeDialects } from '../helpers/dialects';
import { NOW, submission } from '../helpers/aggregator-data';
import { startAggregator, type AggregatorHarness } from '../helpers/usage';

const pad = (i: number) => String(i).padStart(2, '0');

describeDialects('aggregator: bounded version, mode and printer views', (db) => {
  let a: AggregatorHarness;
  beforeAll(async () => {
    a = await startAggregator({ now: () => NOW, databaseUrl: await db.url() });
    // Installation i < 60 runs version 1.0.NN in mode mode-NN with i + 1 printers of type t_NN; ten more
    // run 2.0.0 in docker without printers.
    const at = new Date(NOW - HOUR_MS).toISOString();
    for (let i = 0; i < 70; i++) {
      const own = i < 60;
      const fleet = own ? { printer_count: i + 1, printer_types: [`t_${pad(i)}`], printer_type_counts: { [`t_${pad(i)}`]: i + 1 } } : {};
      const body = submission({ installation_id: randomUUID(), submitted_at: at, app_version: own ? `1.0.${pad(i)}` : '2.0.0', deployment_mode: own ? `mode-${pad(i)}` : 'docker', ...fleet });
      expect((await a.call('POST', '/submit', body)).status).toBe(201);
    }
    // 70 submissions one after another over HTTPS, each stored in its own transaction: a few seconds alone,
    // several times that beside the suite on two busy cores, where the default 20 s was passed. The work is
    // bounded by its count (no wait inside), so a larger limit only gives a slow machine the time.
  }, 60_000);
  afterAll(() => a.close());

  test('GET /stats/versions lists the 50 versions with the most installations and sums the rest in versions_other', async () => {
    const body = (await a.call('GET', '/stats/versions?days=7')).body;
    expect(TOP_NAMES).toBe(50);
    expect(body).toMatchObject({ total_installations: 70, latest_version: '2.0.0', latest_version_adoption: 14.3 });
    expect(body.versions).toHaveLength(50);
    expect(body.versions[0]).toEqual({ version: '2.0.0', installations: 10, percentage: 14.3 });
    // Ties go by name: 1.0.00 to 1.0.48 listed (newest first), 1.0.49 to 1.0.59 summed.
    expect(body.versions[1]).toEqual({ version: '1.0.48', installations: 1, percentage: 1.4 });
    expect(body.versions.at(-1).version).toBe('1.0.00');
    expect(body.versions_other).toEqual({ versions: 11, installations: 11 });
  });

  test('GET /stats/deployment-modes lists the 50 modes with the most installations and sums the rest in modes_other', async () => {
    const body = (await a.call('GET', '/stats/deployment-modes?days=7')).body;
    expect(body.total_installations).toBe(70);
    expect(body.modes).toHaveLength(50);
    expect(body.modes[0]).toEqual({ mode: 'docker', installations: 10, percentage: 14.3 });
    expect(body.modes.at(-1)).toEqual({ mode: 'mode-48', installations: 1, percentage: 1.4 });
    expect(body.modes_other).toEqual({ modes: 11, installations: 11 });
  });

  test('GET /stats/printers counts fleets in SQL, lists the 50 types with the most printers and sums the rest in types_other', async () => {
    const body = (await a.call('GET', '/stats/printers?days=7')).body;
    expect(body).toMatchObject({ total_installations: 70, total_printers: 1830, max_per_installation: 60, average_per_installation: 26.14 });
    // Ten zeros, then 1 to 60: the 35th and 36th of the 70 are 25 and 26.
    expect(body.median_per_installation).toBe(25.5);
    expect(body.fleet_sizes).toEqual([
      { size: '0', installations: 10 },
      { size: '1', installations: 1 },
      { size: '2-5', installations: 4 },
      { size: '6-10', installations: 5 },
      { size: '11-50', installations: 40 },
      { size: '51+', installations: 10 },
    ]);
    expect(body.types).toHaveLength(50);
    expect(body.types[0]).toEqual({ type: 't_59', printers: 60, installations: 1, percentage: 3.3 });
    expect(body.types.at(-1)).toEqual({ type: 't_10', printers: 11, installations: 1, percentage: 0.6 });
    // t_00 to t_09: 1 + ... + 10 printers.
    expect(body.types_other).toEqual({ types: 10, printers: 55, installations: 10 });
    expect((await a.call('GET', '/stats/overview?days=7')).body.printers.types_other).toEqual({ types: 10, printers: 55, installations: 10 });
  });

  test('GET /stats/version-migration follows the same 50 versions in every bucket and sums the rest per bucket', async () => {
    const body = (await a.call('GET', '/stats/version-migration?days=3&interval=day')).body;
    expect(body.versions).toHaveLength(50);
    expect(body.versions.slice(0, 2)).toEqual(['2.0.0', '1.0.48']);
    expect(body.versions_omitted).toBe(11);
    const newest = body.timeline.at(-1);
    expect(newest.total_installations).toBe(70);
    expect(newest.versions).toHaveLength(50);
    expect(newest.versions[0]).toEqual({ version: '2.0.0', installations: 10, percentage: 14.3 });
    expect(newest.versions_other).toEqual({ versions: 11, installations: 11 });
    expect(body.timeline[0]).toMatchObject({ total_installations: 0, versions: [], versions_other: { versions: 0, installations: 0 } });
  });
});
