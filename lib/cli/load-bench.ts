import { fileURLToPath } from 'node:url';
import { ConfigurationError } from '../errors.js';
import type { RunBench } from './bench-options.js';

/**
 * The collectives bench lives beside the library (bench/collectives/run.ts, built into
 * dist/bench/ for the package) and is loaded on demand by `rxccl bench` and `rxccl tune`: the rest
 * of the CLI works without it. The library imports nothing from bench/; the two meet on
 * bench-options.ts.
 */
const BENCH_MODULE = new URL('../../bench/collectives/run.js', import.meta.url);
const BENCH_PATH = fileURLToPath(BENCH_MODULE);

export async function loadBench(): Promise<RunBench> {
  let module: { runCollectivesBench?: unknown };
  try {
    module = (await import(BENCH_MODULE.href)) as { runCollectivesBench?: unknown };
  } catch (error) {
    // Only the bench module itself missing is "not in this build"; anything else is the bench's own error.
    const missing = (error as NodeJS.ErrnoException).code === 'ERR_MODULE_NOT_FOUND' && (error as Error).message.includes(BENCH_PATH.replace(/\.js$/, ''));
    if (!missing) throw error;
    throw new ConfigurationError(`the collectives bench is not available here: no ${BENCH_PATH} (a build without bench/; run \`npm run build\`)`);
  }
  if (typeof module.runCollectivesBench !== 'function') {
    throw new ConfigurationError(`${BENCH_PATH} does not export runCollectivesBench(options)`);
  }
  return module.runCollectivesBench as RunBench;
}
