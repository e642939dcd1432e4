#!/usr/bin/env node
'use strict';
/**
 * Writes flows/dashboard.json and examples/Farm dashboard.json from flows/dashboard/ (the Vue
 * templates, CSS and function code live there as files). Run it after editing those sources;
 * test/unit/dashboard-flow.test.ts fails while the JSON files are out of date.
 */
const fs = require('node:fs');
const path = require('node:path');
const { buildDashboardFlow } = require('../flows/dashboard/flow');

const root = path.join(__dirname, '..');
const OUTPUTS = {
  'flows/dashboard.json': buildDashboardFlow(),
  'examples/Farm dashboard.json': buildDashboardFlow({ example: true }),
};
for (const [file, flow] of Object.entries(OUTPUTS)) {
  fs.writeFileSync(path.join(root, file), JSON.stringify(flow, null, 4) + '\n');
  process.stdout.write(`wrote ${file} (${flow.length} nodes)\n`);
}
