/**
 * `--help` and `-h` on every subcommand print the usage and exit 0 (they used
 * to be refused as unknown options with exit 2). The subcommands are read
 * from the usage itself, so one added later is covered without touching this.
 */
import { spawnSync } from 'node:child_process';
import path from 'node:path';

const BIN = path.join(__dirname, '../../bin/printfarm.js');
const run = (...args: string[]) => spawnSync(process.execPath, [BIN, ...args], { encoding: 'utf8', timeout: 20_000, env: { PATH: process.env.PATH } });

const usage = run('--help');
const subcommands = [...new Set([...usage.stdout.matchAll(/^ {2}printfarm ([a-z][a-z-]*)/gm)].map((m) => m[1]))];

describe('printfarm --help', () => {
  test('the bare --help lists the subcommands', () => {
    expect(usage.status).toBe(0);
    expect(subcommands).toEqual(expect.arrayContaining(['serve', 'simulate', 'aggregator']));
  });

  test.each(subcommands.flatMap((c) => [[c, '--help'], [c, '-h']]))('printfarm %s %s prints its usage and exits 0 without starting anything', (command, flag) => {
    const r = run(command, flag);
    expect(r.stderr).toBe('');
    expect(r.status).toBe(0);
    expect(r.stdout.split('\n')[0]).toMatch(new RegExp(`^Usage: printfarm ${command} `));
    expect(r.stdout).toContain('Environment:');
    // Nothing was started: no service URL, no simulated printer.
    expect(r.stdout).not.toMatch(/is running|control http/);
  });

  test('--help after other options still wins; an unknown option is still refused with exit 2', () => {
    const withOptions = run('serve', '--port', '0', '--help');
    expect(withOptions.status).toBe(0);
    expect(withOptions.stdout).toMatch(/^Usage: printfarm serve /);
    const unknown = run('serve', '--no-such-option');
    expect(unknown.status).toBe(2);
    expect(unknown.stderr).toMatch(/Unknown option '--no-such-option'/);
  });
});
