/**
 * The life cycle of an idea: idea -> planned -> printing -> completed, with
 * archived reachable from every state and left only back to idea.
 *
 *   idea      -> planned, archived
 *   planned   -> printing, idea, archived
 *   printing  -> completed, planned (the print failed or was called off), archived
 *   completed -> archived
 *   archived  -> idea
 *
 * Any other move is refused (409 INVALID_STATUS_TRANSITION). Asking for the
 * state an idea is already in changes nothing and is not an error.
 */

export const IDEA_STATUSES = ['idea', 'planned', 'printing', 'completed', 'archived'] as const;
export type IdeaStatus = (typeof IDEA_STATUSES)[number];

export const IDEA_TRANSITIONS: Record<IdeaStatus, readonly IdeaStatus[]> = {
  idea: ['planned', 'archived'],
  planned: ['printing', 'idea', 'archived'],
  printing: ['completed', 'planned', 'archived'],
  completed: ['archived'],
  archived: ['idea'],
};

export function canMove(from: IdeaStatus, to: IdeaStatus): boolean {
  return IDEA_TRANSITIONS[from].includes(to);
}

/** "idea -> planned, archived; planned -> ..." for documentation and error messages. */
export function describeTransitions(): string {
  return IDEA_STATUSES.map((s) => `${s} -> ${IDEA_TRANSITIONS[s].join(', ')}`).join('; ');
}
