// Lints an OpenAPI document (file path in argv[2]) with Redocly's recommended
// rules and prints the problems as JSON. Runs as its own process because
// @redocly/openapi-core is ESM-only and jest runs CommonJS.
import fs from 'node:fs';
import { createConfig, lintFromString } from '@redocly/openapi-core';

const file = process.argv[2];
const config = await createConfig({ extends: ['recommended'] });
const problems = await lintFromString({ source: fs.readFileSync(file, 'utf8'), absoluteRef: file, config });
process.stdout.write(
  JSON.stringify(
    problems.map((p) => ({ rule: p.ruleId, severity: p.severity, message: p.message, where: p.location?.[0]?.pointer })),
  ),
);
