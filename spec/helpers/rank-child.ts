/**
 * A rank as a separate process, for spec/process: `node rank-child.js SCENARIO` (this file
 * transpiled ahead, spec/helpers/compiled-script.ts). It opens its session with `openSession()` and no options, so everything comes from
 * the GX1_* environment (GX1_COORDINATOR, GX1_UNIQUE_ID, GX1_RANK, GX1_WORLD_SIZE,
 * GX1_TIMEOUT_MS), as under `rxccl launch`.
 *
 * It reports on stdout, one line each: `JOINING <epoch ms>` (as it opens its session), `READY`,
 * `RESULT <name> <json>`, `WAITING`, `BLOCKING`, `ERROR <code> <message>`, `DONE`. Exit codes: 0 done, 3 the session failed, 4 anything else.
 * Scenarios: `collectives`, `die-in-allreduce`, `joined` (below); `split`, `mismatch` (communicators,
 * spec/process/fixtures/communicator-split.ts); `concurrent`, `rank-lost` (calls of several
 * communicators at once, spec/process/fixtures/concurrent-communicators.ts); `fusion`
 * (spec/process/fixtures/fusion.ts); `objects` (spec/process/fixtures/objects.ts); `small-all-reduces`
 * (spec/process/fixtures/links-on-demand.ts).
 */
import { openSession } from '../../lib/index.js';
import type { RankSession } from '../../lib/session/rank-session.js';
import { mismatch, split } from '../process/fixtures/communicator-split.js';
import { concurrent, rankLost } from '../process/fixtures/concurrent-communicators.js';
import { fusion } from '../process/fixtures/fusion.js';
import { objects } from '../process/fixtures/objects.js';
import { smallAllReduces } from '../process/fixtures/links-on-demand.js';

const say = (line: string) => process.stdout.write(`${line}\n`);
const result = (name: string, value: unknown) =>
  say(`RESULT ${name} ${JSON.stringify(value, (_, v: unknown) => (typeof v === 'bigint' ? v.toString() : v))}`);

async function collectives(session: RankSession): Promise<void> {
  const { rank, worldSize } = session;
  const sum = await session.allReduce(Float32Array.from({ length: 4 }, (_, index) => rank + index));
  result('allReduce', Array.from(sum));
  const max = await session.allReduce(BigInt64Array.of(BigInt(rank) * 1_000_000_000_000n), 'max');
  result('allReduceMax', Array.from(max));
  const root = worldSize - 1;
  const broadcast = await session.broadcast(rank === root ? Int32Array.of(7, 8, 9) : new Int32Array(3), root);
  result('broadcast', Array.from(broadcast));
  await session.barrier();
  result('barrier', true);
  const gathered = await session.allGather({ dtype: 'bf16', data: Uint16Array.of(0x3f80 + rank) });
  result('allGather', { dtype: gathered.dtype, data: Array.from(gathered.data) });
  // A ring of point-to-point messages: each rank sends to the next, receives from the previous.
  const next = (rank + 1) % worldSize;
  const previous = (rank + worldSize - 1) % worldSize;
  const [, received] = await Promise.all([
    session.send(next, 42, Uint8Array.of(rank, rank, rank)),
    session.receive(previous, 42, { dtype: 'u8', count: 3 }),
  ]);
  result('ring', Array.from(received as Uint8Array));
}

/** Every rank completes one allReduce; then the victim blocks while the others wait in a second. */
async function dieInAllReduce(session: RankSession): Promise<void> {
  const victim = Number(process.env.VICTIM_RANK ?? '2');
  const first = await session.allReduce(Int32Array.of(1));
  result('warmup', Array.from(first));
  if (session.rank === victim) {
    say('BLOCKING');
    // Busy with something else forever: the parent kills this process.
    setInterval(() => undefined, 1_000);
    await new Promise<never>(() => undefined);
  }
  // ALLREDUCE_ELEMENTS sizes the pending one (a large one goes round the ring on tcp_peer);
  // PENDING_COLLECTIVE=broadcast makes it a broadcast from rank 0 of that size instead.
  const tensor = new Int32Array(Number(process.env.ALLREDUCE_ELEMENTS ?? '1')).fill(2);
  const pending = process.env.PENDING_COLLECTIVE === 'broadcast' ? session.broadcast(tensor, 0) : session.allReduce(tensor);
  // Let the request reach the socket before saying so.
  await new Promise<void>((resolve) => setImmediate(resolve));
  say('WAITING');
  await pending;
  // A rank whose part needs nothing of the victim may end its call (a native chain broadcast's
  // root: it compares headers only with its predecessor on the ring, docs/protocol.md 9.9); its
  // next call needs every rank.
  await session.barrier();
  result('unexpected', 'the allReduce completed without the victim');
}

/** When the session was open (epoch ms, to set against the JOINING lines), then data over every link of the mesh. */
async function joined(session: RankSession): Promise<void> {
  result('joinedAt', Date.now());
  const { rank, worldSize } = session;
  const received = await session.allToAll(Uint32Array.from({ length: worldSize }, () => rank));
  result('allToAll', Array.from(received));
}

const scenarios: Record<string, (session: RankSession) => Promise<void>> = {
  collectives,
  joined,
  'die-in-allreduce': dieInAllReduce,
  split,
  mismatch,
  concurrent,
  'rank-lost': rankLost,
  fusion: (session) => fusion(session, result),
  objects: (session) => objects(session, result),
  'small-all-reduces': (session) => smallAllReduces(session, result),
};

async function main(): Promise<number> {
  const scenario = scenarios[process.argv[2] ?? ''];
  if (scenario === undefined) {
    say(`ERROR USAGE unknown scenario ${JSON.stringify(process.argv[2])}`);
    return 4;
  }
  let session: RankSession;
  try {
    say(`JOINING ${Date.now()}`);
    session = await openSession();
  } catch (error) {
    const e = error as Error & { code?: string };
    say(`ERROR ${e.code ?? e.name} ${e.message}`);
    return 3;
  }
  say('READY');
  try {
    await scenario(session);
    await session.close();
    say('DONE');
    return 0;
  } catch (error) {
    const e = error as Error & { code?: string };
    say(`ERROR ${e.code ?? e.name} ${e.message}`);
    // LINGER_MS: a rank that failed stays a while before its links close (a rank that finds a
    // mismatch first must not end the others' links before they are told of it).
    await new Promise((resolve) => setTimeout(resolve, Number(process.env.LINGER_MS ?? '0')));
    await session.close().catch(() => undefined);
    return 3;
  }
}

main().then(
  (code) => process.exit(code),
  (error: unknown) => {
    say(`ERROR CRASH ${String(error)}`);
    process.exit(4);
  },
);
