/**
 * Jobs as the API shows them: list with filters, pagination and summary;
 * manual creation; updates of the business fields; delete; cancel.
 */
import { DomainError, conflict, notFound } from '../errors';
import type { Store } from '../db';
import type { JobPatch, JobRecord } from '../db/repositories/jobs';
import type { EventBus, JobUpdateEvent } from '../events';
import { ACTIVE_JOB_STATUSES, type CreateJobInput, type JobDetailView, type JobListFilter, type JobView, type UpdateJobInput } from '../schemas/jobs';
import type { SettingsService } from '../settings';
import { calendarDate, dayStart, nowIso, rangeEnd, rangeStart } from '../util/time';
import { paginationOf } from '../util/pagination';
import { KeyedSerial } from '../util/keyed-serial';

/** Stops the job's print on its printer (not another print it runs now); supplied by the printer connections once they exist. */
export type StopPrint = (job: JobRecord) => Promise<void>;

export class JobService {
  /** One change of a job at a time: a change merges into what the previous one stored, not into what both read. */
  private readonly edits = new KeyedSerial();

  constructor(
    private readonly store: Store,
    private readonly settings: SettingsService,
    private readonly bus: EventBus,
  ) {}

  async list(q: JobListFilter) {
    const tz = this.settings.get('timezone');
    const statuses = q.status === undefined ? undefined : q.status === 'running' ? ['printing'] : [q.status];
    const { jobs, total, summary } = await this.store.jobs.listWithSummary(
      {
        printer_id: q.printer_id,
        queue_item_id: q.queue_item_id,
        statuses,
        is_business: q.is_business,
        from: q.start_date === undefined ? undefined : rangeStart(q.start_date, tz),
        to: q.end_date === undefined ? undefined : rangeEnd(q.end_date, tz),
        page: q.page,
        limit: q.limit,
        order_by: q.order_by,
        order_dir: q.order_dir,
      },
      dayStart(calendarDate(new Date(), tz), tz).toISOString(),
    );
    const usage = await this.store.filamentUsage.usageOf(jobs.map((j) => j.id));
    return {
      jobs: jobs.map((j) => jobView(j, usage.get(j.id))),
      pagination: paginationOf(q, total),
      summary,
    };
  }

  async detail(id: number): Promise<JobDetailView> {
    const job = await this.require(id);
    return jobDetailView(job, (await this.store.filamentUsage.usageOf([id])).get(id));
  }

  async create(input: CreateJobInput) {
    const printer = await this.store.printers.get(input.printer_id);
    if (!printer) {
      throw new DomainError(422, 'VALIDATION_ERROR', `Invalid body: printer_id: no printer "${input.printer_id}"`, {
        location: 'body',
        fields: [{ field: 'printer_id', message: 'unknown printer', code: 'not_found' }],
      });
    }
    const now = nowIso();
    const start = input.start_time ? new Date(input.start_time).toISOString() : input.status === 'printing' ? now : null;
    const m = input.material_info ?? {};
    const id = await this.store.jobs.insert({
      printer_id: printer.id,
      printer_name: printer.name,
      job_name: input.job_name,
      filename: input.filename ?? input.file_info?.filename ?? null,
      status: input.status,
      progress: 0,
      layer_total: input.layer_total ?? null,
      start_time: start,
      estimated_duration: input.estimated_duration ?? null,
      estimated_completion: start && input.estimated_duration ? new Date(Date.parse(start) + input.estimated_duration * 1000).toISOString() : null,
      material_type: m.type ?? null,
      material_brand: m.brand ?? null,
      material_color: m.color ?? null,
      material_estimated_usage: m.estimated_usage ?? null,
      material_actual_usage: m.actual_usage ?? null,
      material_cost_per_gram: m.cost_per_gram ?? null,
      file_size: input.file_info?.size ?? null,
      file_path: input.file_info?.path ?? null,
      file_hash: input.file_info?.hash ?? null,
      print_settings: input.print_settings ?? null,
      material_cost: input.material_cost ?? null,
      power_cost: input.power_cost ?? null,
      labor_cost: input.labor_cost ?? null,
      is_business: input.is_business,
      customer_info: input.customer_info ?? null,
      notes: input.notes ?? null,
      created_at: now,
      updated_at: now,
    });
    const job = await this.require(id);
    this.publish(job, 'created');
    return jobDetailView(job);
  }

  update(id: number, input: UpdateJobInput) {
    return this.edits.run(String(id), async () => {
      const job = await this.require(id);
      const now = nowIso();
      const patch: JobPatch = { ...input, updated_at: now };
      if (input.quality_metrics) patch.quality_metrics = { ...(job.quality_metrics ?? {}), ...input.quality_metrics };
      if (input.customer_info) patch.customer_info = withAutoCreation(input.customer_info, job.customer_info);
      // Deleted since it was read: not announced as changed after its removal.
      if (!(await this.store.jobs.update(id, patch))) throw this.gone(id);
      this.publish({ ...job, ...patch } as JobRecord, 'updated');
      return { id, message: 'Job updated', updated_at: now };
    });
  }

  async remove(id: number) {
    const job = await this.require(id);
    // Deleted by another request since it was read: that one announced it.
    if (!(await this.store.jobs.delete(id))) throw this.gone(id);
    const now = nowIso();
    this.publish(job, 'deleted');
    return { id, message: 'Job deleted', deleted_at: now };
  }

  /**
   * Cancels an active job. When `stopPrint` is given (the printer connections),
   * the printer is told first: if it can't be reached the job stays as it is.
   */
  async cancel(id: number, stopPrint?: StopPrint) {
    const job = await this.require(id);
    if (!(ACTIVE_JOB_STATUSES as readonly string[]).includes(job.status)) {
      throw conflict('JOB_NOT_ACTIVE', `Job ${id} is ${job.status}; only queued, printing or paused jobs can be cancelled`, {
        job_id: id,
        status: job.status,
      });
    }
    if (stopPrint && job.status !== 'queued') await stopPrint(job);
    const now = nowIso();
    const patch: JobPatch = {
      status: 'cancelled',
      end_time: now,
      actual_duration: job.start_time ? Math.max(0, Math.round((Date.parse(now) - Date.parse(job.start_time)) / 1000)) : null,
      updated_at: now,
    };
    if (!(await this.store.jobs.transition(id, ACTIVE_JOB_STATUSES, patch))) {
      throw conflict('JOB_NOT_ACTIVE', `Job ${id} ended while it was being cancelled`, { job_id: id });
    }
    this.publish({ ...job, ...patch } as JobRecord, 'cancelled');
    return { id, status: 'cancelled' as const, message: 'Job cancellation initiated', cancelled_at: now };
  }

  private async require(id: number): Promise<JobRecord> {
    const job = await this.store.jobs.get(id);
    if (!job) throw this.gone(id);
    return job;
  }

  private gone(id: number) {
    return notFound('JOB_NOT_FOUND', `Job ${id} not found`, { job_id: id });
  }

  private publish(job: JobRecord, change: JobUpdateEvent['change']): void {
    this.bus.emit('job_update', {
      id: job.id,
      job_id: job.id,
      printer_id: job.printer_id,
      change,
      job_name: job.job_name,
      status: job.status,
      progress: job.progress,
      end_time: job.end_time,
    });
  }
}

const num = (v: number | null | undefined) => v ?? 0;

/** The keys the monitoring writes into customer_info of an auto-created job (spec 2; end_reason: why a lost print failed). */
const AUTO_CREATION_KEYS = ['auto_created', 'discovery_time', 'printer_start_time', 'discovered_on_startup', 'end_reason'] as const;

/**
 * New customer data replaces the old as a whole, but an auto-created job keeps its auto-creation metadata:
 * clients tell auto-created jobs by customer_info.auto_created (the spec gives them no other filter).
 */
function withAutoCreation(next: Record<string, unknown>, stored: JobRecord['customer_info']): Record<string, unknown> {
  if (stored?.auto_created !== true) return next;
  const kept = Object.fromEntries(AUTO_CREATION_KEYS.filter((k) => k in stored).map((k) => [k, stored[k]]));
  return { ...next, ...kept };
}

/** What a print used per slot (filament tracking): spool, grams, cost. */
type SlotUsage = { spool_id: number | null; slot: number; material: string | null; color: string | null; grams: number; cost: number | null };

export function jobView(job: JobRecord, usage: readonly SlotUsage[] = []): JobView {
  return {
    id: job.id,
    printer_id: job.printer_id,
    printer_name: job.printer_display_name,
    job_name: job.job_name,
    filename: job.filename,
    status: job.status as JobView['status'],
    progress: job.progress,
    layer_current: job.layer_current,
    layer_total: job.layer_total,
    start_time: job.start_time,
    end_time: job.end_time,
    estimated_duration: job.estimated_duration,
    actual_duration: job.actual_duration,
    estimated_completion: job.estimated_completion,
    material_info: {
      type: job.material_type,
      color: job.material_color,
      estimated_usage: job.material_estimated_usage,
      actual_usage: job.material_actual_usage,
    },
    file_info: { size: job.file_size, path: job.file_path },
    costs: {
      material_cost: num(job.material_cost),
      power_cost: num(job.power_cost),
      // Money: rounded to cents so that 0.1 + 0.2 shows as 0.3.
      total_cost: Math.round((num(job.material_cost) + num(job.power_cost) + num(job.labor_cost)) * 100) / 100,
    },
    is_business: job.is_business,
    customer_info: job.customer_info,
    queue_item_id: job.queue_item_id,
    filament_usage: usage.map((u) => ({ spool_id: u.spool_id, slot: u.slot, material: u.material, color: u.color, grams: u.grams, cost: u.cost })),
    created_at: job.created_at,
    updated_at: job.updated_at,
  };
}

export function jobDetailView(job: JobRecord, usage: readonly SlotUsage[] = []): JobDetailView {
  const base = jobView(job, usage);
  const ps = job.print_settings ?? {};
  const qm = job.quality_metrics ?? {};
  const n = (v: unknown) => (typeof v === 'number' ? v : null);
  const s = (v: unknown) => (typeof v === 'string' ? v : null);
  return {
    ...base,
    material_info: { ...base.material_info, brand: job.material_brand, cost_per_gram: job.material_cost_per_gram },
    file_info: { ...base.file_info, filename: job.filename, hash: job.file_hash, uploaded_at: job.file_uploaded_at },
    print_settings: {
      layer_height: n(ps.layer_height),
      infill: n(ps.infill),
      print_speed: n(ps.print_speed),
      nozzle_temp: n(ps.nozzle_temp),
      bed_temp: n(ps.bed_temp),
    },
    costs: { ...base.costs, labor_cost: num(job.labor_cost) },
    quality_metrics: {
      first_layer_adhesion: s(qm.first_layer_adhesion),
      surface_finish: s(qm.surface_finish),
      dimensional_accuracy: n(qm.dimensional_accuracy),
    },
    notes: job.notes,
  };
}
