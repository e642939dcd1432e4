import { PassLoop } from '../../../service/queue/pass-loop';

/** A pass that waits until released, counting its runs. */
function controlledPass() {
  let runs = 0;
  let release: (() => void) | null = null;
  const pass = () => {
    runs++;
    return new Promise<void>((resolve) => (release = resolve));
  };
  return { pass, runs: () => runs, release: () => release?.() };
}

const turn = () => new Promise((resolve) => setImmediate(resolve));

describe('PassLoop', () => {
  it('passes at once when woken after a quiet spell', async () => {
    const p = controlledPass();
    const loop = new PassLoop(p.pass, () => undefined);
    loop.wake('first');
    expect(p.runs()).toBe(1);
    p.release();
    await loop.idle();
    expect(p.runs()).toBe(1);
  });

  it('makes one more pass of all the wakes during a pass and in the gap after it', async () => {
    const p = controlledPass();
    const loop = new PassLoop(p.pass, () => undefined);
    loop.wake('first');
    for (let i = 0; i < 100; i++) loop.wake(`during ${i}`);
    p.release();
    // In the gap after the pass (one wake per turn, as reports come): still one more pass, not one each.
    for (let i = 0; i < 5; i++) {
      await turn();
      loop.wake(`gap ${i}`);
    }
    expect(p.runs()).toBe(1);
    const done = loop.idle();
    // The second pass starts at the gap's end; release it when it does.
    const releaser = setInterval(() => p.release(), 5);
    await done;
    clearInterval(releaser);
    expect(p.runs()).toBe(2);
  });

  it('reports a failed pass and keeps passing', async () => {
    const failures: string[] = [];
    let runs = 0;
    const loop = new PassLoop(
      async () => {
        runs++;
        if (runs === 1) throw new Error('database locked');
      },
      (err, reason) => failures.push(`${reason}: ${(err as Error).message}`),
    );
    loop.wake('first');
    await loop.idle();
    loop.wake('second');
    await loop.idle();
    expect(failures).toEqual(['first: database locked']);
    expect(runs).toBe(2);
  });

  it('stops: the gap ends at once and no wake passes again', async () => {
    const p = controlledPass();
    const loop = new PassLoop(p.pass, () => undefined);
    loop.wake('first');
    loop.wake('during');
    p.release();
    await turn();
    loop.stop();
    await loop.idle();
    loop.wake('after stop');
    expect(p.runs()).toBe(1);
  });
});
