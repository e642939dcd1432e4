/**
 * Tests that need the system ffmpeg (RTSPS cameras): skipped with a message
 * where it is missing, except in CI (`CI=true`), which installs Debian's
 * package and must run them: there a missing ffmpeg fails the suite.
 */
import fs from 'node:fs';
import { ffmpegStatus } from '../../service/cameras/ffmpeg';

const IN_CI = /^(1|true)$/i.test(process.env.CI ?? '');

/** Why the ffmpeg tests cannot run here, or null when they can. Throws in CI. */
export function ffmpegUnavailable(): string | null {
  const status = ffmpegStatus();
  if (status.available) return null;
  if (IN_CI) throw new Error(`${status.message}: CI=true requires the camera tests to run`);
  return status.message;
}

export interface ChildInfo {
  pid: number;
  /** ps state letter: R, S, Z (zombie) … */
  state: string;
  cmdline: string;
}

/** This process's child processes as Linux's /proc shows them (empty elsewhere). */
export function childProcesses(): ChildInfo[] {
  if (!fs.existsSync('/proc/self/stat')) return [];
  const out: ChildInfo[] = [];
  for (const entry of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = fs.readFileSync(`/proc/${entry}/stat`, 'utf8');
      // pid (comm) state ppid …; comm may hold spaces and parentheses, so read after the last ')'.
      const [state, ppid] = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      if (Number(ppid) !== process.pid) continue;
      const cmdline = fs.readFileSync(`/proc/${entry}/cmdline`, 'utf8').split('\0').join(' ').trim();
      out.push({ pid: Number(entry), state, cmdline });
    } catch {
      // The process ended while we looked.
    }
  }
  return out;
}

/** Polls `check` until it holds or `ms` pass (then one last look decides). */
export async function eventually(check: () => boolean | Promise<boolean>, ms = 10_000): Promise<boolean> {
  const deadline = Date.now() + ms;
  while (Date.now() < deadline) {
    if (await check()) return true;
    await new Promise((r) => setTimeout(r, 50));
  }
  return check();
}
