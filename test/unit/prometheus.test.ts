import { Counter, Gauge, Histogram, Registry } from '../../service/util/prometheus';

describe('Prometheus text format', () => {
  test('HELP and TYPE precede each metric; labels are escaped; infinities are spelt +Inf', async () => {
    const r = new Registry();
    const c = r.add(new Counter('things_total', 'Things\nseen'));
    c.inc({ kind: 'a "quoted" \\ value\nwith newline' });
    c.inc({ kind: 'b' }, 2);
    c.inc({ kind: 'b' });
    r.add(new Gauge('level', 'A level', async () => [{ labels: { where: 'x' }, value: Infinity }]));
    expect(await r.render()).toBe(
      [
        '# HELP things_total Things\\nseen',
        '# TYPE things_total counter',
        'things_total{kind="a \\"quoted\\" \\\\ value\\nwith newline"} 1',
        'things_total{kind="b"} 3',
        '# HELP level A level',
        '# TYPE level gauge',
        'level{where="x"} +Inf',
        '',
      ].join('\n'),
    );
  });

  test('histogram buckets are cumulative, with +Inf equal to the count and the sum of the observations', async () => {
    const r = new Registry();
    const h = r.add(new Histogram('latency_seconds', 'Latency', [0.1, 1]));
    for (const v of [0.05, 0.1, 0.5, 3]) h.observe({ route: '/x' }, v);
    const lines = (await r.render()).split('\n');
    expect(lines).toEqual(
      expect.arrayContaining([
        'latency_seconds_bucket{route="/x",le="0.1"} 2',
        'latency_seconds_bucket{route="/x",le="1"} 3',
        'latency_seconds_bucket{route="/x",le="+Inf"} 4',
        'latency_seconds_sum{route="/x"} 3.65',
        'latency_seconds_count{route="/x"} 4',
      ]),
    );
  });
});
