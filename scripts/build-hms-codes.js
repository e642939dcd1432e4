#!/usr/bin/env node
'use strict';
/**
 * Regenerates service/printers/bambu/hms-codes.json, the table that turns Bambu Lab HMS and print_error codes
 * into the vendor's own sentences (English, and German where Bambu Lab publishes it).
 *
 * Source: ha-bambulab (https://github.com/greghesp/ha-bambulab, MIT licence), whose
 * scripts/update_error_text.py downloads Bambu Lab's texts from https://e.bambulab.com/query.php and the
 * wiki links from https://wiki.bambulab.com/en/hms/home into
 * custom_components/bambu_lab/pybambu/hms_error_text/{hms_en,hms_de,wiki_links}.json.gz.
 * The texts are Bambu Lab's; we keep them word for word.
 *
 * Usage: node scripts/build-hms-codes.js <folder with hms_en.json[.gz], hms_de.json[.gz], wiki_links.json[.gz]> [upstream commit]
 *   e.g. after `git clone https://github.com/greghesp/ha-bambulab`:
 *   node scripts/build-hms-codes.js ha-bambulab/custom_components/bambu_lab/pybambu/hms_error_text $(git -C ha-bambulab rev-parse HEAD)
 *
 * Output shape (codes without underscores, upper-case hex as the printers' apps print them):
 *   { source, licence, upstream_commit, hms: { "0700200000020001": { en, de?, wiki?, models?: { "H2D": { en, de? } } } },
 *     print_error: { "07008011": { ... } } }
 * `models` holds the sentences Bambu Lab words differently for some printers (ha-bambulab's model names:
 * X1C, A1MINI, H2DPRO ...); `wiki` is the printer family folder of the wiki page (/en/<wiki>/troubleshooting/hmscode/<code>).
 */
const fs = require('node:fs');
const path = require('node:path');
const zlib = require('node:zlib');

const [folder, commit] = process.argv.slice(2);
if (!folder) {
  console.error('usage: node scripts/build-hms-codes.js <hms_error_text folder> [upstream commit]');
  process.exit(2);
}

function load(name) {
  for (const file of [`${name}.json`, `${name}.json.gz`]) {
    const full = path.join(folder, file);
    if (!fs.existsSync(full)) continue;
    const raw = fs.readFileSync(full);
    return JSON.parse((file.endsWith('.gz') ? zlib.gunzipSync(raw) : raw).toString('utf8'));
  }
  throw new Error(`${name}.json(.gz) not found in ${folder}`);
}

const en = load('hms_en');
const de = load('hms_de');
const wiki = load('wiki_links');

/** {sentence: [models]} -> {text: default sentence, models: {model: sentence}} ([] marks the default). */
function variants(entry) {
  if (!entry || typeof entry !== 'object') return null;
  let text = null;
  const models = {};
  for (const [sentence, list] of Object.entries(entry)) {
    const clean = String(sentence).trim();
    if (!clean) continue;
    if (!Array.isArray(list) || list.length === 0) text ??= clean;
    else for (const model of list) models[String(model)] = clean;
  }
  // A code worded for some printers only: the first wording stands for the others too.
  text ??= Object.values(models)[0] ?? null;
  return text === null ? null : { text, models };
}

function wikiFolder(code) {
  const entry = wiki[code];
  if (!entry) return null;
  const paths = Object.entries(entry);
  const chosen = paths.find(([, list]) => Array.isArray(list) && list.length === 0) ?? paths[0];
  return chosen ? (/^\/en\/([a-z0-9]+)\/troubleshooting\//.exec(chosen[0])?.[1] ?? null) : null;
}

function table(kind) {
  const out = {};
  const codes = Object.keys(en[kind] ?? {}).filter((c) => /^[0-9A-F]+$/i.test(c)).sort();
  for (const code of codes) {
    const english = variants(en[kind][code]);
    if (!english) continue;
    const german = variants(de[kind]?.[code]);
    const row = { en: english.text };
    if (german) row.de = german.text;
    const where = kind === 'device_hms' ? wikiFolder(code) : null;
    if (where) row.wiki = where;
    const models = {};
    for (const [model, sentence] of Object.entries(english.models)) {
      if (sentence === english.text && (german?.models[model] ?? german?.text) === german?.text) continue;
      models[model] = { en: sentence, ...(german ? { de: german.models[model] ?? german.text } : {}) };
    }
    if (Object.keys(models).length) row.models = models;
    out[code.toUpperCase()] = row;
  }
  return out;
}

const result = {
  source:
    "Bambu Lab's HMS and print_error texts (https://e.bambulab.com/query.php, wiki https://wiki.bambulab.com/en/hms/home) as collected by ha-bambulab (https://github.com/greghesp/ha-bambulab, custom_components/bambu_lab/pybambu/hms_error_text)",
  licence: 'ha-bambulab: MIT licence. The sentences are Bambu Lab\'s own, quoted unchanged so that operators read what the printer\'s app and wiki say.',
  upstream_commit: commit ?? null,
  regenerate: 'node scripts/build-hms-codes.js <hms_error_text folder> [commit]',
  hms: table('device_hms'),
  print_error: table('device_error'),
};
const target = path.join(__dirname, '..', 'service', 'printers', 'bambu', 'hms-codes.json');
fs.writeFileSync(target, JSON.stringify(result, null, 0).replace(/\},"/g, '},\n"') + '\n');
console.log(`${target}: ${Object.keys(result.hms).length} HMS codes, ${Object.keys(result.print_error).length} print_error codes`);
