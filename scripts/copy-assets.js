#!/usr/bin/env node
'use strict';
/**
 * Build step after tsc: puts the files the compiled service serves next to it.
 * - ReDoc's standalone bundle, with its one remote URL (the footer logo on
 *   Redocly's CDN) replaced by an inline SVG: the service runs on closed LANs.
 * - Node-RED editor files (.html), icons and locales next to dist/nodes.
 */
const fs = require('node:fs');
const path = require('node:path');

const root = path.join(__dirname, '..');
const dist = path.join(root, 'dist');

function copyTree(from, to, filter = () => true) {
  if (!fs.existsSync(from)) return;
  for (const entry of fs.readdirSync(from, { withFileTypes: true })) {
    const src = path.join(from, entry.name);
    const dst = path.join(to, entry.name);
    if (entry.isDirectory()) copyTree(src, dst, filter);
    else if (filter(entry.name)) {
      fs.mkdirSync(to, { recursive: true });
      fs.copyFileSync(src, dst);
    }
  }
}

// ReDoc (a devDependency: the published package carries the rewritten copy).
const redocSrc = require.resolve('redoc/bundles/redoc.standalone.js');
const LOGO = 'https://cdn.redoc.ly/redoc/logo-mini.svg';
const inlineLogo =
  'data:image/svg+xml;base64,' +
  Buffer.from('<svg xmlns="http://www.w3.org/2000/svg" width="16" height="16"><circle cx="8" cy="8" r="7" fill="#5a3fc0"/></svg>').toString('base64');
const bundle = fs.readFileSync(redocSrc, 'utf8');
if (!bundle.includes(LOGO)) throw new Error(`ReDoc bundle changed: ${LOGO} not found; check it for other remote URLs`);
fs.mkdirSync(path.join(dist, 'assets'), { recursive: true });
fs.writeFileSync(path.join(dist, 'assets', 'redoc.standalone.js'), bundle.split(LOGO).join(inlineLogo));

// Node-RED: editor html, icons, locales.
copyTree(path.join(root, 'nodes'), path.join(dist, 'nodes'), (name) => name.endsWith('.html'));
copyTree(path.join(root, 'icons'), path.join(dist, 'nodes', 'icons'));
copyTree(path.join(root, 'locales'), path.join(dist, 'nodes', 'locales'));

// Bambu Lab's HMS / print_error texts (service/printers/bambu/hms-text.ts reads them next to itself).
fs.copyFileSync(path.join(root, 'service', 'printers', 'bambu', 'hms-codes.json'), path.join(dist, 'service', 'printers', 'bambu', 'hms-codes.json'));
