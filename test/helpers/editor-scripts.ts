/**
 * The pack's editor scripts (nodes/*.html) run as the Node-RED editor runs them, with a stub RED and
 * jQuery: printfarm-server.html first (it defines the helpers the other dialogs share and fills in
 * their shared rows), then the node's own script.
 */
import fs from 'node:fs';
import path from 'node:path';
import vm from 'node:vm';

/** The <script type="…"> elements of an html file: their attributes and text. */
export const scripts = (html: string, type: string) =>
  [...html.matchAll(new RegExp(`<script type="${type}"([^>]*)>([\\s\\S]*?)</script>`, 'g'))].map((m) => ({ attrs: m[1], body: m[2] }));

/** A template element as an editor script sees it (jQuery's each gives the DOM element). */
export interface TemplateElement {
  text: string;
  getAttribute(name: string): string;
}

export interface EditorDefinition {
  category: string;
  defaults: Record<string, { value: unknown; type?: string; required?: boolean; validate?: unknown }>;
  credentials?: Record<string, { type: string }>;
  icon?: string;
  color?: string;
  inputs?: number;
  outputs?: number;
  /** A function of the definition (Node-RED calls it with `this._`, the set's catalog), or a fixed text. */
  paletteLabel?: string | (() => string);
  label?: () => string;
}

/**
 * Runs the editor script of node set `name` from `dir` (the sources or the build) after
 * printfarm-server's; `$('script…').each` visits `templates`. Returns what the node's script registered.
 */
export function registerEditor(dir: string, name: string, templates: TemplateElement[] = []): Map<string, EditorDefinition> {
  const editorScript = (set: string) => scripts(fs.readFileSync(path.join(dir, `${set}.html`), 'utf8'), 'text/javascript')[0].body;
  const found = new Map<string, EditorDefinition>();
  const RED = {
    nodes: { registerType: (type: string, def: EditorDefinition) => found.set(type, def) },
    validators: { number: () => () => true, regex: () => () => true, typedInput: () => () => true },
    _: (k: string) => k,
  };
  const $ = (selector: unknown) => ({
    on() {},
    val() {},
    toggle() {},
    each(fn: (this: TemplateElement) => void) {
      if (typeof selector === 'string' && selector.startsWith('script')) templates.forEach((t) => fn.call(t));
    },
  });
  const context = vm.createContext({ RED, window: {}, $ });
  if (name !== 'printfarm-server') {
    vm.runInContext(editorScript('printfarm-server'), context);
    found.clear();
  }
  vm.runInContext(editorScript(name), context);
  return found;
}

/**
 * A node's template as the editor opens it: the rows every node shares (server, printer, name) are
 * written once in printfarm-server.html; the node's script fills them into its template as it loads.
 */
export function editorTemplate(dir: string, name: string): string {
  const html = fs.readFileSync(path.join(dir, `${name}.html`), 'utf8');
  const templates = scripts(html, 'text/html').filter((s) => s.attrs.includes(`data-template-name="${name}"`));
  if (templates.length !== 1) throw new Error(`${name}.html: ${templates.length} templates named ${name}`);
  const element = { text: templates[0].body, getAttribute: () => name };
  registerEditor(dir, name, [element]);
  if (element.text.includes('data-printfarm-row')) throw new Error(`${name}.html: a shared row was not filled in`);
  return element.text;
}
