/**
 * What the printfarm-events node passes on: the notifications of the chosen kinds and printer, each cause
 * once (a /ws reconnect or a second service frame of the same cause sends nothing new).
 */
import { NOTIFY_KINDS, type Notification, type NotifyKind, type NotifyLanguage } from '../service/notify/kinds';

/** Causes remembered per node. */
const MAX_CAUSES = 2000;

export function kindList(value: unknown): Set<NotifyKind> {
  const list = Array.isArray(value) ? value : String(value ?? '').split(',');
  const chosen = list.map((k) => String(k).trim()).filter((k): k is NotifyKind => (NOTIFY_KINDS as readonly string[]).includes(k));
  return new Set(chosen.length ? chosen : NOTIFY_KINDS);
}

/** "de", "de-DE" -> German; "auto" follows Node-RED's language; anything else English. */
export function languageOf(setting: unknown, runtimeLanguage: string | undefined): NotifyLanguage {
  const chosen = setting === 'de' || setting === 'en' ? setting : (runtimeLanguage ?? 'en');
  return /^de\b/i.test(chosen) ? 'de' : 'en';
}

export class NotificationFilter {
  private readonly seen = new Set<string>();

  constructor(
    private readonly kinds: Set<NotifyKind>,
    private readonly printerId: string,
  ) {}

  /** True when `n` should go out (remembering its cause). */
  pass(n: Partial<Notification>): n is Notification {
    if (typeof n.kind !== 'string' || !this.kinds.has(n.kind)) return false;
    if (this.printerId && n.printer_id !== this.printerId) return false;
    const cause = typeof n.cause === 'string' ? n.cause : `${n.kind}:${n.printer_id}:${n.at}`;
    if (this.seen.has(cause)) return false;
    this.seen.add(cause);
    if (this.seen.size > MAX_CAUSES) this.seen.delete(this.seen.values().next().value as string);
    return true;
  }
}
