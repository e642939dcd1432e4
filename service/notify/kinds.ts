/**
 * The events worth telling a person, and their words in English and German. The service's notifier and the
 * Node-RED `printfarm-events` node share these texts, so a phone shows the same sentence either way.
 */
export const NOTIFY_KINDS = ['print_finished', 'print_failed', 'attention', 'printer_offline', 'plate_needs_clearing', 'queue_item_failed', 'spool_low'] as const;
export type NotifyKind = (typeof NOTIFY_KINDS)[number];
export type NotifySeverity = 'fatal' | 'serious' | 'common' | 'info';

/** One event worth telling: the body of a webhook POST and of the `notification` frame on /ws. */
export interface Notification {
  kind: NotifyKind;
  title: string;
  message: string;
  printer_id: string | null;
  printer_name: string | null;
  severity: NotifySeverity;
  at: string;
  data: Record<string, unknown>;
  /** What makes two events the same one (a printer's offline spell, a job, an attention cause): told once. */
  cause: string;
  /** Title and message in English and German (the Node-RED node picks its language; webhooks get the service's). */
  texts: Record<NotifyLanguage, { title: string; message: string }>;
}

export type NotifyLanguage = 'en' | 'de';
export const NOTIFY_LANGUAGES: readonly NotifyLanguage[] = ['en', 'de'];

/** What a text is made of. */
export interface NotifyFacts {
  printer: string;
  job?: string;
  minutes?: number;
  message?: string;
  action?: string;
  item?: string;
  reason?: string;
  spool?: string;
  remaining?: string;
}

type Texts = Record<NotifyKind, { title: (f: NotifyFacts) => string; message: (f: NotifyFacts) => string }>;

const EN: Texts = {
  print_finished: { title: (f) => `${f.printer}: print finished`, message: (f) => `${f.job ?? 'The print'} finished on ${f.printer}.` },
  print_failed: { title: (f) => `${f.printer}: print failed`, message: (f) => `${f.job ?? 'The print'} failed on ${f.printer}${f.message ? `: ${f.message}` : '.'}` },
  attention: { title: (f) => `${f.printer} needs attention`, message: (f) => [f.message, f.action].filter(Boolean).join(' ') },
  printer_offline: { title: (f) => `${f.printer} is offline`, message: (f) => `${f.printer} has been offline for ${f.minutes ?? 0} min${f.reason ? ` (${f.reason})` : ''}.` },
  plate_needs_clearing: { title: (f) => `${f.printer}: clear the plate`, message: (f) => `The plate of ${f.printer} needs clearing before the next print.` },
  queue_item_failed: { title: (f) => `Queue: ${f.item ?? 'an item'} failed`, message: (f) => `The queued print ${f.item ?? ''} failed${f.reason ? `: ${f.reason}` : '.'}`.replace(/  +/g, ' ') },
  spool_low: { title: (f) => `Spool low: ${f.spool ?? 'a spool'}`, message: (f) => `${f.spool ?? 'A spool'}${f.printer ? ` on ${f.printer}` : ''} is running low${f.remaining ? ` (${f.remaining} left)` : ''}.` },
};

const DE: Texts = {
  print_finished: { title: (f) => `${f.printer}: Druck fertig`, message: (f) => `${f.job ?? 'Der Druck'} ist auf ${f.printer} fertig.` },
  print_failed: { title: (f) => `${f.printer}: Druck fehlgeschlagen`, message: (f) => `${f.job ?? 'Der Druck'} ist auf ${f.printer} fehlgeschlagen${f.message ? `: ${f.message}` : '.'}` },
  attention: { title: (f) => `${f.printer} braucht Aufmerksamkeit`, message: (f) => [f.message, f.action].filter(Boolean).join(' ') },
  printer_offline: { title: (f) => `${f.printer} ist offline`, message: (f) => `${f.printer} ist seit ${f.minutes ?? 0} min offline${f.reason ? ` (${f.reason})` : ''}.` },
  plate_needs_clearing: { title: (f) => `${f.printer}: Druckplatte räumen`, message: (f) => `Die Druckplatte von ${f.printer} muss vor dem nächsten Druck geräumt werden.` },
  queue_item_failed: { title: (f) => `Warteschlange: ${f.item ?? 'ein Eintrag'} fehlgeschlagen`, message: (f) => `Der Druck ${f.item ?? ''} aus der Warteschlange ist fehlgeschlagen${f.reason ? `: ${f.reason}` : '.'}`.replace(/  +/g, ' ') },
  spool_low: { title: (f) => `Spule fast leer: ${f.spool ?? 'eine Spule'}`, message: (f) => `${f.spool ?? 'Eine Spule'}${f.printer ? ` auf ${f.printer}` : ''} ist fast leer${f.remaining ? ` (noch ${f.remaining})` : ''}.` },
};

/** Title and message of an event in `language` ("de", "de-DE" -> German; anything else English). */
export function notifyText(kind: NotifyKind, facts: NotifyFacts, language: string): { title: string; message: string } {
  const texts = /^de\b/i.test(language) ? DE : EN;
  return { title: texts[kind].title(facts), message: texts[kind].message(facts) };
}
