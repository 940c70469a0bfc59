/**
 * `rxccl` for the specs' child processes: what bin/rxccl.mjs runs in a checkout (lib/cli/main.ts,
 * in this process), transpiled ahead by spec/helpers/compiled-script.ts rather than under tsx's
 * loader, which costs every command a second of CPU (spec/cli/rxccl-process.ts). Beside it, the
 * bench's and the probe's ranks run transpiled too (lib/cli/load-bench.ts, bench/collectives/run.ts
 * and lib/cli/probe-command.ts take the .js files next to them).
 */
import { runCli } from '../../lib/cli/main.js';

// exitCode rather than exit(), as bin/rxccl.mjs: the last output lines must reach a pipe first.
process.exitCode = await runCli(process.argv.slice(2));
