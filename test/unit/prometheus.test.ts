import { Counter, Histogram, Registry, scrapedGauge } from '../../service/util/prometheus';

/** The lines of one metric family (HELP, TYPE and samples), in order. */
const family = (text: string, name: string) =>
  text.split('\n').filter((l) => [`# HELP ${name} `, `# TYPE ${name} `, `${name}{`, `${name} `].some((start) => l.startsWith(start)));

describe('Prometheus text format', () => {
  test('HELP and TYPE precede each metric; labels are escaped; infinities are spelt +Inf', async () => {
    const r = new Registry(false);
    const c = new Counter({ name: 'things_total', help: 'Things\nseen', labelNames: ['kind'], registers: [r.prom] });
    c.inc({ kind: 'a "quoted" \\ value\nwith newline' });
    c.inc({ kind: 'b' }, 2);
    c.inc({ kind: 'b' });
    scrapedGauge(r, 'level', 'A level', async () => [{ labels: { where: 'x' }, value: Infinity }], ['where']);
    const text = await r.render();
    expect(family(text, 'things_total')).toEqual([
      '# HELP things_total Things\\nseen',
      '# TYPE things_total counter',
      'things_total{kind="a \\"quoted\\" \\\\ value\\nwith newline"} 1',
      'things_total{kind="b"} 3',
    ]);
    expect(family(text, 'level')).toEqual(['# HELP level A level', '# TYPE level gauge', 'level{where="x"} +Inf']);
  });

  test('a scraped gauge is read at every scrape; label sets it no longer returns disappear', async () => {
    const r = new Registry(false);
    let rows = [
      { labels: { status: 'printing' }, value: 2 },
      { labels: { status: 'idle' }, value: 1 },
    ];
    let reads = 0;
    scrapedGauge(r, 'printers', 'Printers by status', () => (reads++, rows), ['status']);
    scrapedGauge(r, 'clients', 'Clients', () => 7);
    const first = await r.render();
    expect(family(first, 'printers').slice(2)).toEqual(['printers{status="printing"} 2', 'printers{status="idle"} 1']);
    expect(family(first, 'clients').slice(2)).toEqual(['clients 7']);
    rows = [{ labels: { status: 'idle' }, value: 3 }];
    const second = await r.render();
    expect(family(second, 'printers').slice(2)).toEqual(['printers{status="idle"} 3']);
    expect(reads).toBe(2);
  });

  test('histogram buckets are cumulative, with +Inf equal to the count and the sum of the observations', async () => {
    const r = new Registry(false);
    const h = new Histogram({ name: 'latency_seconds', help: 'Latency', labelNames: ['route'], buckets: [0.1, 1], registers: [r.prom] });
    for (const v of [0.05, 0.1, 0.5, 3]) h.observe({ route: '/x' }, v);
    const lines = (await r.render()).split('\n');
    expect(lines).toEqual(
      expect.arrayContaining([
        'latency_seconds_bucket{le="0.1",route="/x"} 2',
        'latency_seconds_bucket{le="1",route="/x"} 3',
        'latency_seconds_bucket{le="+Inf",route="/x"} 4',
        'latency_seconds_sum{route="/x"} 3.65',
        'latency_seconds_count{route="/x"} 4',
      ]),
    );
  });

  test('the standard process and Node.js metrics follow each service once, however many services the process made', async () => {
    const a = new Registry();
    const b = new Registry();
    scrapedGauge(a, 'printfarm_only_a', 'A', () => 1);
    const [textA, textB] = [await a.render(), await b.render()];
    for (const text of [textA, textB]) {
      for (const [name, type] of [
        ['process_cpu_seconds_total', 'counter'],
        ['process_resident_memory_bytes', 'gauge'],
        ['process_start_time_seconds', 'gauge'],
        ['nodejs_eventloop_lag_seconds', 'gauge'],
        ['nodejs_heap_size_used_bytes', 'gauge'],
      ]) {
        expect(text.split('\n').filter((l) => l.startsWith(`# TYPE ${name} `))).toEqual([`# TYPE ${name} ${type}`]);
      }
      expect(Number(/^process_resident_memory_bytes (\d+)$/m.exec(text)?.[1])).toBeGreaterThan(1024 * 1024);
    }
    expect(textA).toContain('printfarm_only_a 1');
    expect(textB).not.toContain('printfarm_only_a');
  });
});
