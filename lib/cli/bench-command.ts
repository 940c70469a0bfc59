import { fileURLToPath } from 'node:url';
import { ConfigurationError } from '../errors.js';
import { defineCommand } from './command.js';

/**
 * The collectives bench lives outside the library (bench/collectives/run.ts) and is not part of
 * the built package, so it is loaded on demand: the rest of the CLI works without it.
 */
const BENCH_MODULE = new URL('../../bench/collectives/run.js', import.meta.url);
const BENCH_PATH = fileURLToPath(BENCH_MODULE);

export interface BenchOptions {
  readonly worldSize?: number;
  readonly op?: string;
  readonly minBytes?: number;
  readonly maxBytes?: number;
  readonly dtype?: string;
  readonly transport?: string;
  readonly json: boolean;
  readonly onProgress?: (done: number, total: number) => void;
}

/** A one-line progress bar on stderr, redrawn in place: `[#######.............]  7/20 cells`. */
export function progressBar(write: (text: string) => void, width = 30): (done: number, total: number) => void {
  return (done, total) => {
    const filled = total === 0 ? width : Math.round((done / total) * width);
    write(`\r[${'#'.repeat(filled)}${'.'.repeat(width - filled)}] ${String(done).padStart(String(total).length)}/${total} cells${done === total ? '\n' : ''}`);
  };
}

export const benchCommand = defineCommand(
  {
    name: 'bench',
    brief: 'Measure collectives over a local job',
    synopsis: '[-n N] [--op allreduce|...] [--min-bytes B --max-bytes B] [--dtype f32] [--transport T] [--json]',
    summary: 'Measures collectives over a local job of N ranks (bench/collectives), sweeping message sizes.',
    flags: {
      ranks: { kind: 'integer', short: 'n', value: 'N', min: 1, help: 'number of ranks' },
      op: { kind: 'string', value: 'OP', help: 'the collective to measure (allreduce, broadcast, allgather, ...)' },
      'min-bytes': { kind: 'integer', value: 'B', help: 'smallest message size in bytes' },
      'max-bytes': { kind: 'integer', value: 'B', help: 'largest message size in bytes' },
      dtype: { kind: 'string', value: 'T', help: 'element type (f32, i32, bf16, ...)' },
      transport: { kind: 'string', value: 'T', help: 'tcp_host_staged (default) or tcp_peer' },
      json: { kind: 'boolean', help: 'print the results as JSON' },
    },
  },
  async (values) => {
    const bench = await loadBench();
    const options: BenchOptions = {
      ...(values.ranks !== undefined ? { worldSize: values.ranks } : {}),
      ...(values.op !== undefined ? { op: values.op } : {}),
      ...(values['min-bytes'] !== undefined ? { minBytes: values['min-bytes'] } : {}),
      ...(values['max-bytes'] !== undefined ? { maxBytes: values['max-bytes'] } : {}),
      ...(values.dtype !== undefined ? { dtype: values.dtype } : {}),
      ...(values.transport !== undefined ? { transport: values.transport } : {}),
      json: values.json ?? false,
      // A progress bar only for a person watching a terminal, never into pipes or JSON.
      ...(!values.json && process.stderr.isTTY ? { onProgress: progressBar((text) => process.stderr.write(text)) } : {}),
    };
    const status = await bench(options);
    return typeof status === 'number' ? status : 0;
  },
);

async function loadBench(): Promise<(options: BenchOptions) => Promise<unknown>> {
  let module: { runCollectivesBench?: unknown };
  try {
    module = (await import(BENCH_MODULE.href)) as { runCollectivesBench?: unknown };
  } catch (error) {
    // Only the bench module itself missing is "not in this build"; anything else is the bench's own error.
    const missing = (error as NodeJS.ErrnoException).code === 'ERR_MODULE_NOT_FOUND' && (error as Error).message.includes(BENCH_PATH.replace(/\.js$/, ''));
    if (!missing) throw error;
    throw new ConfigurationError(
      `the collectives bench is not available here (no ${BENCH_PATH.replace(/\.js$/, '.ts')} or .js): it comes with a source checkout of rxccl, not with the built package`,
    );
  }
  if (typeof module.runCollectivesBench !== 'function') {
    throw new ConfigurationError(`${BENCH_PATH} does not export runCollectivesBench(options)`);
  }
  return module.runCollectivesBench as (options: BenchOptions) => Promise<unknown>;
}
