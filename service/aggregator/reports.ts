/** Mail reports of the aggregation service over SMTP (nodemailer): a test mail, the weekly and the monthly summary. */
import nodemailer, { type Transporter } from 'nodemailer';
import type { Logger } from 'pino';
import type { z } from 'zod';
import { DomainError } from '../errors';
import type { ReportData } from './schemas';

export interface SmtpOptions {
  host: string;
  port?: number;
  /** TLS from the first byte (port 465); otherwise STARTTLS when the server offers it. */
  secure?: boolean;
  user?: string;
  pass?: string;
  from?: string;
  /** Default recipients of reports and test mails. */
  to?: string[];
  /** Extra trusted CA (PEM) for a private mail server. */
  ca?: string | Buffer;
  /** Skip STARTTLS even when offered (local relays, tests). */
  ignoreTLS?: boolean;
}

type Report = z.infer<typeof ReportData>;

const escapeHtml = (s: string) => s.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]!);

export function reportText(r: Report): string {
  const change = r.active_change_percent === null ? 'no previous data' : `${r.active_change_percent > 0 ? '+' : ''}${r.active_change_percent} %`;
  const lines = [
    `Printfarm usage report (${r.kind})`,
    `Period: ${r.period_start} to ${r.period_end}`,
    '',
    `Active installations: ${r.active_installations} (previous period ${r.previous_active_installations}, ${change})`,
    `New installations: ${r.new_installations}`,
    `Submissions: ${r.submissions}`,
    `Printers: ${r.total_printers}`,
    `Jobs: ${r.jobs_created} created, ${r.jobs_completed} completed, ${r.jobs_failed} failed (success rate ${r.job_success_rate} %)`,
    `Files: ${r.files_downloaded} downloaded, ${r.files_uploaded} uploaded`,
    `Errors: ${r.errors}`,
    '',
    'Versions:',
    ...(r.top_versions.length ? r.top_versions.map((v) => `  ${v.version}: ${v.installations}`) : ['  (none)']),
    'Countries:',
    ...(r.top_countries.length ? r.top_countries.map((c) => `  ${c.country_code}: ${c.installations}`) : ['  (none)']),
    'Deployment modes:',
    ...(r.deployment_modes.length ? r.deployment_modes.map((d) => `  ${d.mode}: ${d.installations}`) : ['  (none)']),
    'Anomalies:',
    ...(r.anomalies.length ? r.anomalies.map((a) => `  [${a.severity}] ${a.message}`) : ['  none']),
  ];
  return lines.join('\n') + '\n';
}

function reportHtml(r: Report): string {
  const rows = (items: [string, string | number][]) => items.map(([k, v]) => `<tr><th align="left">${escapeHtml(k)}</th><td>${escapeHtml(String(v))}</td></tr>`).join('');
  return `<!DOCTYPE html><html><body>
<h1>Printfarm usage report (${r.kind})</h1>
<p>${escapeHtml(r.period_start)} to ${escapeHtml(r.period_end)}</p>
<table>${rows([
    ['Active installations', r.active_installations],
    ['Previous period', r.previous_active_installations],
    ['Change', r.active_change_percent === null ? 'n/a' : `${r.active_change_percent} %`],
    ['New installations', r.new_installations],
    ['Submissions', r.submissions],
    ['Printers', r.total_printers],
    ['Jobs created / completed / failed', `${r.jobs_created} / ${r.jobs_completed} / ${r.jobs_failed}`],
    ['Job success rate', `${r.job_success_rate} %`],
    ['Files downloaded / uploaded', `${r.files_downloaded} / ${r.files_uploaded}`],
    ['Errors', r.errors],
  ])}</table>
<h2>Versions</h2><table>${rows(r.top_versions.map((v) => [v.version, v.installations]))}</table>
<h2>Countries</h2><table>${rows(r.top_countries.map((c) => [c.country_code, c.installations]))}</table>
<h2>Deployment modes</h2><table>${rows(r.deployment_modes.map((d) => [d.mode, d.installations]))}</table>
<h2>Anomalies</h2><ul>${r.anomalies.map((a) => `<li><b>${a.severity}</b> ${escapeHtml(a.message)}</li>`).join('') || '<li>none</li>'}</ul>
</body></html>`;
}

export class Mailer {
  private transport: Transporter | null = null;
  private sent = 0;
  private lastSentAt: string | null = null;
  private lastError: string | null = null;

  constructor(
    private readonly smtp: SmtpOptions | undefined,
    private readonly log: Logger,
  ) {}

  get configured(): boolean {
    return !!this.smtp?.host;
  }

  status() {
    const s = this.smtp;
    return {
      configured: this.configured,
      host: s?.host ?? null,
      port: s ? (s.port ?? (s.secure ? 465 : 587)) : null,
      secure: s?.secure ?? false,
      auth: !!s?.user,
      from: s?.from ?? null,
      recipients: s?.to ?? [],
      reports_sent: this.sent,
      last_sent_at: this.lastSentAt,
      last_error: this.lastError,
    };
  }

  private transporter(): Transporter {
    const s = this.smtp;
    if (!s?.host) {
      throw new DomainError(503, 'EMAIL_NOT_CONFIGURED', 'No SMTP server configured (AGGREGATOR_SMTP_HOST or --smtp-host)', {});
    }
    this.transport ??= nodemailer.createTransport({
      host: s.host,
      port: s.port ?? (s.secure ? 465 : 587),
      secure: s.secure ?? false,
      ignoreTLS: s.ignoreTLS ?? false,
      ...(s.user ? { auth: { user: s.user, pass: s.pass ?? '' } } : {}),
      ...(s.ca ? { tls: { ca: s.ca } } : {}),
      connectionTimeout: 10_000,
      greetingTimeout: 10_000,
      socketTimeout: 30_000,
    });
    return this.transport;
  }

  private recipients(to: string[] | undefined): string[] {
    const list = to ?? this.smtp?.to ?? [];
    if (list.length === 0) {
      throw new DomainError(422, 'VALIDATION_ERROR', 'No recipients: give "to" or configure AGGREGATOR_REPORT_TO', {
        location: 'body',
        fields: [{ field: 'to', message: 'no recipients configured', code: 'missing' }],
      });
    }
    return list;
  }

  async send(subject: string, text: string, html: string | undefined, to?: string[]): Promise<{ message_id: string; recipients: string[] }> {
    const transport = this.transporter();
    const recipients = this.recipients(to);
    try {
      const info = await transport.sendMail({ from: this.smtp?.from ?? 'printfarm-aggregator@localhost', to: recipients, subject, text, ...(html ? { html } : {}) });
      this.sent++;
      this.lastSentAt = new Date().toISOString();
      this.lastError = null;
      this.log.info({ subject, recipients: recipients.length }, 'report mail sent');
      return { message_id: String(info.messageId ?? ''), recipients };
    } catch (err) {
      this.lastError = (err as Error).message;
      this.log.warn({ err: (err as Error).message, subject }, 'report mail failed');
      throw new DomainError(502, 'EMAIL_SEND_FAILED', `The mail could not be sent: ${(err as Error).message}`, { code: (err as { code?: string }).code ?? null });
    }
  }

  sendReport(report: Report, to?: string[]) {
    const subject = `Printfarm usage report (${report.kind}): ${report.period_start.slice(0, 10)} to ${report.period_end.slice(0, 10)}`;
    return this.send(subject, reportText(report), reportHtml(report), to).then((r) => ({ ...r, subject }));
  }

  close(): void {
    this.transport?.close();
    this.transport = null;
  }
}
