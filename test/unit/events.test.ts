/**
 * The event bus: typed and catch-all listeners in registration order, a
 * failing listener kept from the others, and telemetry (printer_status frames
 * whose only news is a temperature) sparing the listeners registered with
 * `telemetry: false`.
 */
import { EventBus, type PrinterStatusEvent } from '../../service/events';

const frame = (nozzle: number): PrinterStatusEvent => ({ printer_id: 'p1', change: 'state', status: 'online', connection_status: 'connected', progress: 0, temperatures: { nozzle, bed: 20 } });

describe('EventBus', () => {
  it('calls typed listeners, then catch-all ones, each in the order they were added', () => {
    const bus = new EventBus();
    const heard: string[] = [];
    bus.onAny((type) => heard.push(`any1:${type}`));
    bus.on('printer_status', () => heard.push('typed1'));
    bus.onAny((type) => heard.push(`any2:${type}`), { telemetry: false });
    bus.on('printer_status', () => heard.push('typed2'), { telemetry: false });
    bus.emit('printer_status', frame(200));
    expect(heard).toEqual(['typed1', 'typed2', 'any1:printer_status', 'any2:printer_status']);
  });

  it('gives telemetry only to the listeners that did not decline it, and every other event to all', () => {
    const bus = new EventBus();
    const heard: string[] = [];
    bus.onAny((type) => heard.push(`wire:${type}`));
    bus.onAny((type) => heard.push(`notifier:${type}`), { telemetry: false });
    bus.on('printer_status', (e) => heard.push(`metrics:${e.temperatures.nozzle}`), { telemetry: true });
    bus.on('printer_status', (e) => heard.push(`tracker:${e.temperatures.nozzle}`), { telemetry: false });

    bus.emit('printer_status', frame(201), true);
    expect(heard).toEqual(['metrics:201', 'wire:printer_status']);

    heard.length = 0;
    bus.emit('printer_status', frame(202));
    bus.emit('system_alert', { level: 'info', message: 'x' }, false);
    expect(heard).toEqual(['metrics:202', 'tracker:202', 'wire:printer_status', 'notifier:printer_status', 'wire:system_alert', 'notifier:system_alert']);
  });

  it('stops a listener from both lists, and keeps the others', () => {
    const bus = new EventBus();
    const heard: string[] = [];
    const stopA = bus.on('printer_status', () => heard.push('a'));
    const stopB = bus.on('printer_status', () => heard.push('b'), { telemetry: false });
    const stopAny = bus.onAny(() => heard.push('any'));
    stopA();
    stopAny();
    bus.emit('printer_status', frame(1), true);
    bus.emit('printer_status', frame(2));
    expect(heard).toEqual(['b']);
    stopB();
    bus.emit('printer_status', frame(3));
    expect(heard).toEqual(['b']);
  });

  it('keeps a failing listener from the others and reports it', () => {
    const failures: string[] = [];
    const bus = new EventBus((err, type) => failures.push(`${type}: ${(err as Error).message}`));
    const heard: number[] = [];
    bus.on('printer_status', () => {
      throw new Error('broken');
    });
    bus.onAny(() => {
      throw new Error('broken too');
    });
    bus.on('printer_status', (e) => heard.push(e.temperatures.nozzle));
    bus.emit('printer_status', frame(7), true);
    expect(heard).toEqual([7]);
    expect(failures).toEqual(['printer_status: broken', 'printer_status: broken too']);
  });
});
