/** The JSON body of a simulator control call: an object (empty when no body), or why it is refused. */
import type http from 'node:http';
import { readBody } from './prusa/http-util';

export async function readControlBody(req: http.IncomingMessage): Promise<{ body: Record<string, unknown> } | { error: string }> {
  const raw = await readBody(req, 64 * 1024);
  if (!raw.length) return { body: {} };
  try {
    const parsed: unknown = JSON.parse(raw.toString('utf8'));
    if (parsed && typeof parsed === 'object' && !Array.isArray(parsed)) return { body: parsed as Record<string, unknown> };
    return { error: 'body must be a JSON object' };
  } catch {
    return { error: 'body is not JSON' };
  }
}
