/**
 * The one client of a Printfarm service (REST `/api/v1` and `/ws`), used by
 * the Node-RED nodes and the tests:
 *
 *   PrintfarmClient   typed REST calls; errors are PrintfarmError
 *   RealtimeClient    /ws frames, reconnecting with backoff
 *   FarmMonitor       every printer's state from /ws, polling every 30 s while /ws is down
 *   FarmConnection    client + monitor (+ an embedded service), with one status
 *   JobEventStream    job events (auto-created, started, progress...) from the frames
 *   DownloadQueue     the spec's client-side automatic download component
 *
 * The G-code preview (gcode-preview.ts) is imported separately: it loads the
 * preview library.
 */
export * from './errors';
export * from './types';
export * from './rest';
export * from './realtime';
export * from './monitor';
export * from './connection';
export * from './job-events';
export * from './download-queue';
