/** Timing helpers for the kernel benchmarks: rates from batches of repeated runs. */

/**
 * Best rate, in GB/s of `bytes` per run, over batches of `run`. The batch size is calibrated so a
 * batch takes about 20 ms (at least one run), and batches repeat for about `budgetMs`. The best
 * batch rather than the median: on a shared VM other processes only ever slow a batch down, so
 * the fastest one is the most reproducible estimate of the machine itself.
 */
export async function gigabytesPerSecond(bytes: number, run: () => unknown, budgetMs = 200): Promise<number> {
  await run(); // warm-up: JIT, page faults on fresh buffers
  let perBatch = 1;
  for (;;) {
    const seconds = await timeBatch(run, perBatch);
    if (seconds >= 0.02 || perBatch >= 1 << 20) break;
    perBatch *= Math.max(2, Math.min(16, Math.ceil(0.02 / Math.max(seconds, 1e-7))));
  }
  const rates: number[] = [];
  const start = performance.now();
  while (rates.length < 3 || (performance.now() - start < budgetMs && rates.length < 50)) {
    const seconds = await timeBatch(run, perBatch);
    rates.push((bytes * perBatch) / seconds / 1e9);
  }
  return Math.max(...rates);
}

async function timeBatch(run: () => unknown, count: number): Promise<number> {
  const start = process.hrtime.bigint();
  for (let i = 0; i < count; i++) await run();
  return Number(process.hrtime.bigint() - start) / 1e9;
}

export function formatBytes(bytes: number): string {
  if (bytes >= 1 << 20) return `${bytes / (1 << 20)} MiB`;
  if (bytes >= 1 << 10) return `${bytes / (1 << 10)} KiB`;
  return `${bytes} B`;
}
