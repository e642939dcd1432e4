/**
 * The aggregation service's mail reports, read from a real SMTP server running in this process.
 */
import { randomUUID } from 'node:crypto';
import type { AddressInfo } from 'node:net';
import { SMTPServer } from 'smtp-server';
import { DAY_MS, HOUR_MS } from '../../service/aggregator/repository';
import { NOW, submission, expectErrorBody } from '../helpers/aggregator-data';
import { startAggregator, type AggregatorHarness } from '../helpers/usage';

describe('aggregation service mail reports', () => {
  interface Mail {
    from: string;
    to: string[];
    raw: string;
  }
  let smtp: SMTPServer;
  let smtpPort: number;
  const mails: Mail[] = [];
  let refuse = false;
  let a: AggregatorHarness;

  beforeAll(async () => {
    smtp = new SMTPServer({
      authOptional: true,
      disabledCommands: ['STARTTLS'],
      logger: false,
      onRcptTo(address, _session, cb) {
        cb(refuse ? Object.assign(new Error('mailbox unavailable'), { responseCode: 550 }) : null);
        void address;
      },
      onData(stream, session, cb) {
        let raw = '';
        stream.setEncoding('utf8');
        stream.on('data', (d) => (raw += d));
        stream.on('end', () => {
          mails.push({ from: String(session.envelope.mailFrom && session.envelope.mailFrom.address), to: session.envelope.rcptTo.map((r) => r.address), raw });
          cb();
        });
      },
    });
    await new Promise<void>((resolve) => smtp.listen(0, '127.0.0.1', resolve));
    smtpPort = (smtp.server.address() as AddressInfo).port;
    a = await startAggregator({
      now: () => NOW,
      smtp: { host: '127.0.0.1', port: smtpPort, ignoreTLS: true, from: 'stats@printfarm.test', to: ['ops@printfarm.test', 'lead@printfarm.test'] },
    });
    const id = randomUUID();
    await a.agg.repo.accept(submission({ installation_id: id, submitted_at: new Date(NOW - 3 * DAY_MS).toISOString(), app_version: '2.0.0', country_code: 'FR', total_jobs_created: 12, total_jobs_completed: 9, total_jobs_failed: 3, printer_count: 4 }), NOW - 3 * DAY_MS, 10, HOUR_MS);
    await a.agg.repo.accept(submission({ submitted_at: new Date(NOW - 20 * DAY_MS).toISOString(), app_version: '1.9.0', country_code: 'IT', deployment_mode: 'docker' }), NOW - 20 * DAY_MS, 10, HOUR_MS);
  });
  afterAll(async () => {
    await a.close();
    await new Promise<void>((resolve) => smtp.close(() => resolve()));
  });

  /** Decodes quoted-printable soft breaks and escapes, enough to read the text. */
  const readable = (raw: string) => raw.replace(/=\r?\n/g, '').replace(/=([0-9A-F]{2})/g, (_m, h: string) => String.fromCharCode(parseInt(h, 16)));

  test('reports the mail configuration without the password', async () => {
    const res = await a.call('GET', '/reports/email-status');
    expect(res.body).toEqual({
      configured: true,
      host: '127.0.0.1',
      port: smtpPort,
      secure: false,
      auth: false,
      from: 'stats@printfarm.test',
      recipients: ['ops@printfarm.test', 'lead@printfarm.test'],
      reports_sent: 0,
      last_sent_at: null,
      last_error: null,
    });
  });

  test('sends a test mail to the configured recipients, or to the ones given', async () => {
    const res = await a.call('POST', '/reports/test-email', {});
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ sent: true, recipients: ['ops@printfarm.test', 'lead@printfarm.test'], subject: 'Printfarm aggregator: test mail', report: null });
    const mail = mails.at(-1)!;
    expect(mail.from).toBe('stats@printfarm.test');
    expect(mail.to).toEqual(['ops@printfarm.test', 'lead@printfarm.test']);
    expect(mail.raw).toMatch(/^Subject: Printfarm aggregator: test mail\r?$/m);
    expect(readable(mail.raw)).toContain('This is a test mail of the Printfarm aggregation service');
    expect(mail.raw).toContain(res.body.message_id);

    await a.call('POST', '/reports/test-email', { to: ['someone@printfarm.test'] });
    expect(mails.at(-1)!.to).toEqual(['someone@printfarm.test']);
    expectErrorBody(await a.call('POST', '/reports/test-email', { to: ['not an address'] }), 422, 'VALIDATION_ERROR');
  });

  test('the weekly and monthly reports carry the figures of their period', async () => {
    const weekly = await a.call('POST', '/reports/weekly', {});
    expect(weekly.status).toBe(200);
    expect(weekly.body.report).toMatchObject({
      kind: 'weekly',
      period_start: new Date(NOW - 7 * DAY_MS).toISOString(),
      period_end: new Date(NOW).toISOString(),
      active_installations: 1,
      previous_active_installations: 0,
      active_change_percent: null,
      new_installations: 1,
      submissions: 1,
      jobs_created: 12,
      jobs_completed: 9,
      jobs_failed: 3,
      job_success_rate: 75,
      total_printers: 4,
      top_versions: [{ version: '2.0.0', installations: 1 }],
      top_countries: [{ country_code: 'FR', installations: 1 }],
    });
    const mail = readable(mails.at(-1)!.raw);
    expect(mail).toContain('Subject: Printfarm usage report (weekly): 2026-02-22 to 2026-03-01');
    expect(mail).toContain('Active installations: 1 (previous period 0, no previous data)');
    expect(mail).toContain('Jobs: 12 created, 9 completed, 3 failed (success rate 75 %)');
    expect(mail).toContain('  FR: 1');
    expect(mail).toMatch(/Content-Type: text\/html/);

    const monthly = await a.call('POST', '/reports/monthly', {});
    expect(monthly.body.report).toMatchObject({ kind: 'monthly', active_installations: 2, submissions: 2, top_versions: [{ version: '1.9.0', installations: 1 }, { version: '2.0.0', installations: 1 }] });
    const monthlyMail = readable(mails.at(-1)!.raw);
    expect(monthlyMail).toContain('Subject: Printfarm usage report (monthly): 2026-01-30 to 2026-03-01');
    expect(monthlyMail).toContain('  IT: 1');
    expect(monthlyMail).toContain('  docker: 1');

    const status = (await a.call('GET', '/reports/email-status')).body;
    expect(status.reports_sent).toBe(4);
    expect(status.last_sent_at).not.toBeNull();
  });

  test('a refusing mail server gives 502 EMAIL_SEND_FAILED and shows in the status', async () => {
    refuse = true;
    try {
      const err = expectErrorBody(await a.call('POST', '/reports/weekly', {}), 502, 'EMAIL_SEND_FAILED');
      expect(err.message).toMatch(/mailbox unavailable/);
      expect((await a.call('GET', '/reports/email-status')).body.last_error).toMatch(/mailbox unavailable/);
    } finally {
      refuse = false;
    }
  });

  test('without an SMTP server, reports answer 503 EMAIL_NOT_CONFIGURED', async () => {
    const bare = await startAggregator();
    try {
      expect((await bare.call('GET', '/reports/email-status')).body).toMatchObject({ configured: false, host: null, recipients: [] });
      for (const p of ['/reports/test-email', '/reports/weekly', '/reports/monthly']) expectErrorBody(await bare.call('POST', p, {}), 503, 'EMAIL_NOT_CONFIGURED');
    } finally {
      await bare.close();
    }
  });
});
