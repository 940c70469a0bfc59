import { lastValueFrom } from '/work/main/node_modules/rxjs/dist/esm5/index.js';
import { memoryJob } from '/work/main/spec/helpers/memory-job.ts';
import { exchangeBarrier } from '/work/main/lib/collectives/barrier/exchange.ts';
import { exchangeAllReduce } from '/work/main/lib/collectives/all-reduce/exchange.ts';
import { viewTensor } from '/work/main/lib/tensor.ts';
const { ranks } = memoryJob(2);
for (const [name, run] of [['barrier', (l: any, c: any) => exchangeBarrier(l, {}, c)], ['allreduce', (l: any, c: any) => exchangeAllReduce(l, { view: viewTensor(Float32Array.of(1, 2)), op: 'sum' }, c)]] as const) {
  for (let i = 0; i < 2000; i++) await Promise.all(ranks.map(({ links, context }) => lastValueFrom(run(links, context), { defaultValue: undefined })));
  const t0 = performance.now(); const n = 20000;
  for (let i = 0; i < n; i++) await Promise.all(ranks.map(({ links, context }) => lastValueFrom(run(links, context), { defaultValue: undefined })));
  console.log(name, ((performance.now() - t0) / n * 1000 / 2).toFixed(2), 'us per rank-op');
}
