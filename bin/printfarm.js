#!/usr/bin/env node
'use strict';
// Launcher: the CLI itself is compiled TypeScript (npm install builds dist/).
require('../dist/service/cli.js').main(process.argv.slice(2));
