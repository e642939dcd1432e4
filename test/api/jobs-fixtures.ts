/**
 * What the jobs API tests (test/api/jobs-*.test.ts) share: the spec's key lists, a job with every
 * field, and `useJobsApi`, which gives each test a fresh service (and database) with two inactive
 * printers plus the small helpers the tests call.
 */
import type { JobPatch } from '../../service/db/repositories/jobs';
import type { DialectUnderTest } from '../helpers/dialects';
import { bambu, prusa, startService, type Harness } from '../helpers/service';

export const TZ = 'Europe/Berlin';
export const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;
export const DAY = 86_400_000;

/** The keys of a job in the list (spec section 2, "Job"), plus `queue_item_id` (the print queue's link, issue 13). */
export const LIST_KEYS = [
  'id',
  'printer_id',
  'printer_name',
  'job_name',
  'filename',
  'status',
  'progress',
  'layer_current',
  'layer_total',
  'start_time',
  'end_time',
  'estimated_duration',
  'actual_duration',
  'estimated_completion',
  'material_info',
  'file_info',
  'costs',
  'is_business',
  'customer_info',
  'queue_item_id',
  'filament_usage',
  'created_at',
  'updated_at',
].sort();
export const DETAIL_KEYS = [...LIST_KEYS, 'print_settings', 'quality_metrics', 'notes'].sort();

/** A manual job with every field the create body takes. */
export const fullJob = (extra: Record<string, unknown> = {}) => ({
  printer_id: 'x1c-01',
  job_name: 'Gearbox housing',
  filename: 'gearbox_housing.3mf',
  status: 'printing',
  start_time: '2026-03-11T08:00:00+01:00',
  estimated_duration: 5400,
  layer_total: 320,
  material_info: { type: 'PETG', brand: 'Prusament', color: 'Galaxy Black', estimated_usage: 87.5, actual_usage: 12.25, cost_per_gram: 0.03 },
  file_info: { size: 2_345_678, path: '/cache/gearbox_housing.3mf', hash: 'sha256:' + 'ab'.repeat(32) },
  print_settings: { layer_height: 0.2, infill: 15, print_speed: 250, nozzle_temp: 250, bed_temp: 80 },
  is_business: true,
  customer_info: { order_id: 'ORD-1001', customer_name: 'ACME GmbH' },
  material_cost: 2.5,
  power_cost: 0.75,
  labor_cost: 5,
  notes: 'handle with care',
  ...extra,
});

/** The ids of a list answer, in its order. */
export const ids = (body: { jobs: { id: number }[] }) => body.jobs.map((j) => j.id);

export interface JobsApi {
  /** The running test's service; a test that restarts it assigns the new one here (afterEach closes it). */
  h: Harness;
  /** Creates a job through the API (201) and answers its detail. */
  createJob(body?: Record<string, unknown>): Promise<any>; // eslint-disable-line @typescript-eslint/no-explicit-any
  /** Test setup through the data layer: moves a job to a state the API cannot reach by itself. */
  setJob(id: number, patch: JobPatch): Promise<void>;
  /** GET /jobs with a query (200) and its body. */
  list(query?: string): Promise<any>; // eslint-disable-line @typescript-eslint/no-explicit-any
}

/** A fresh service per test, on the dialect under test, with the printers x1c-01 and mk4-01 (inactive). */
export function useJobsApi(db: DialectUnderTest): JobsApi {
  const api: JobsApi = {
    h: undefined as unknown as Harness,
    async createJob(body = {}) {
      const res = await api.h.post('/api/v1/jobs', { printer_id: 'x1c-01', job_name: 'Job', ...body });
      expect(res.status).toBe(201);
      return res.body;
    },
    async setJob(id, patch) {
      expect(await api.h.service.context.store.jobs.update(id, patch)).toBe(true);
    },
    async list(query = '') {
      const res = await api.h.get(`/api/v1/jobs${query}`);
      expect(res.status).toBe(200);
      return res.body;
    },
  };
  beforeEach(async () => {
    api.h = await startService({ env: { TIMEZONE: TZ }, ...(await db.options()) });
    // Inactive printers: the service does not connect to them, so a cancel changes the job in the db only
    // (cancels that reach a printer are proven against the simulators in test/e2e).
    expect((await api.h.post('/api/v1/printers', bambu('x1c-01', { is_active: false }))).status).toBe(201);
    expect((await api.h.post('/api/v1/printers', prusa('mk4-01', { is_active: false }))).status).toBe(201);
  });
  afterEach(() => api.h.close());
  return api;
}
