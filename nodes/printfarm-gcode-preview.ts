/**
 * gcode-preview: a G-code toolpath picture. Input msg.payload: G-code text
 * (string or Buffer), a file path, or a file id of the service's catalog.
 * Output: msg.payload = the PNG (Buffer), msg.analysis = what the preview
 * optimisation decided (print_start_line, skipped_lines, rendered_lines,
 * method, marker), msg.preview = size, method and the settings applied. The
 * optimisation settings are the service's unless the node sets them.
 */
import type { NodeAPI, NodeDef, NodeMessage, NodeMessageInFlow } from '@node-red/registry';
import type { ConnectionState } from '../service/client';
import { gcodePreview, previewSource, type PreviewOptions, type PreviewSourceHint } from '../service/client/gcode-preview';
import { asError, clientOf, connectionStatus, useServer, type ServerNode, type ServerUser } from './shared';

interface GcodePreviewDef extends NodeDef {
  /** Optional: G-code text and paths need no service (then the defaults apply). */
  server: string;
  source: PreviewSourceHint;
  /** service | on | off */
  optimize: 'service' | 'on' | 'off';
  maxLines: string | number;
  renderLines: string | number;
  size: string | number;
  view: 'iso' | 'top';
}

const TYPE = 'printfarm-gcode-preview';

export = function (RED: NodeAPI) {
  function GcodePreviewNode(this: ServerUser, def: GcodePreviewDef) {
    RED.nodes.createNode(this, def);
    const node = this;
    const t = (key: string, subs?: Record<string, string | number>) => RED._(key, subs);
    const num = (v: string | number | undefined) => (v === '' || v === undefined || v === null || !(Number(v) > 0) ? undefined : Math.floor(Number(v)));
    const options: PreviewOptions = {
      optimize_print_only: def.optimize === 'on' ? true : def.optimize === 'off' ? false : undefined,
      optimization_max_lines: num(def.maxLines),
      render_max_lines: num(def.renderLines),
      size: Math.min(2048, num(def.size) ?? 512),
      view: def.view === 'top' ? 'top' : 'iso',
    };
    let server: ServerNode | null = null;
    let busy = 0;

    node.onServerState = (state: ConnectionState, error?: Error) => {
      if (!busy) node.status(state === 'connected' || state === 'polling' ? {} : connectionStatus(t, TYPE, state, error));
    };
    if (def.server) {
      server = useServer(RED, node, def.server, TYPE);
      if (!server) return;
    }

    node.on('input', (msg: NodeMessageInFlow, send: (m: NodeMessage) => void, done: (err?: Error) => void) => {
      busy++;
      node.status({ fill: 'blue', shape: 'ring', text: t('printfarm-gcode-preview.status.rendering') });
      (async () => {
        const source = previewSource(msg.payload, (msg as { source?: PreviewSourceHint }).source ?? def.source ?? 'auto');
        const client = server ? await clientOf(server) : null;
        return gcodePreview(source, client, options);
      })().then(
        (r) => {
          busy--;
          const lines = r.analysis?.rendered_lines ?? 0;
          node.status({ fill: 'green', shape: 'dot', text: r.analysis ? t('printfarm-gcode-preview.status.rendered', { lines }) : t('printfarm-gcode-preview.status.done') });
          send({
            ...msg,
            payload: r.png,
            analysis: r.analysis,
            preview: { width: r.width, height: r.height, method: r.method, settings: r.settings, ...(r.file ? { file: r.file } : {}) },
          });
          done();
        },
        (err) => {
          busy--;
          node.status({ fill: 'red', shape: 'dot', text: t('printfarm-gcode-preview.status.failed') });
          done(asError(err));
        },
      );
    });
  }

  RED.nodes.registerType(TYPE, GcodePreviewNode);
};
