#!/usr/bin/env node
// The `vexil` command. The CLI is compiled TypeScript (`npm run build`); this file exists at install
// time so npm can link the command before the first build.
import '../dist/cli.js';
