/**
 * The JS plane's agreement on the mesh (lib/collectives/schedule/link-agreement.ts,
 * docs/protocol.md 9.7): the native plane's header, alone, on the schedule's own links, no round
 * of its own. Ranks that disagree (op, count, type, root, ring order, algorithm) are named at once
 * with both descriptors and the job is aborted (every JS row, worlds 2..9: a property); a silent
 * rank is named at exactly the timeout.
 */
import fc from 'fast-check';
import { lastValueFrom, type Observable, tap, VirtualTimeScheduler } from 'rxjs';
import { describe, expect, it } from 'vitest';
import type { CollectiveContext, CollectiveName } from '../../lib/collectives/algorithm.js';
import { runRow } from '../../lib/collectives/run-scheduled.js';
import { checkHeader, headerAlone, headerPeers, headerTag } from '../../lib/collectives/schedule/link-agreement.js';
import { ringAllReduce } from '../../lib/collectives/all-reduce/ring.js';
import { ALGORITHMS, type AlgorithmRow } from '../../lib/collectives/select.js';
import { describeOperation } from '../../lib/protocol/agreement.js';
import { ElementType } from '../../lib/protocol/element-type.js';
import { Opcode } from '../../lib/protocol/opcode.js';
import { viewTensor } from '../../lib/tensor.js';
import { memoryJob } from '../../lib/testing/index.js';
import { COLLECTIVE_RESPONSE_GRACE_MS } from '../../lib/transport/collective-channel.js';

/** The JS plane's row `name` of `collective`. */
function jsRow<N extends CollectiveName>(collective: N, name: string): AlgorithmRow<N> {
  const row = (ALGORITHMS[collective] as readonly AlgorithmRow<N>[]).find((candidate) => candidate.plane === 'js' && candidate.name === name);
  if (row === undefined) throw new Error(`no JS row ${name} for ${collective}`);
  return row;
}

const MISMATCH = /^collective sequence 0 mismatch: rank (\d) submitted (\{[^}]*\}), rank (\d) submitted (\{[^}]*\})$/;

interface Call {
  readonly collective: CollectiveName;
  readonly row: string;
  readonly request: (rank: number) => unknown;
}

const allReduce = (op: 'sum' | 'max', count = 8, dtype: 'f32' | 'i32' = 'f32', row = 'ring'): Call => ({
  collective: 'allReduce',
  row,
  request: (rank) => ({ view: viewTensor(dtype === 'f32' ? new Float32Array(count).fill(rank) : new Int32Array(count).fill(rank)), op }),
});
const broadcast = (root: number): Call => ({ collective: 'broadcast', row: 'binomial', request: () => ({ view: viewTensor(new Float32Array(4)), root }) });

describe('the JS plane\'s agreement on the links (mesh)', () => {
  it.each<[string, Call, Call, string, Partial<CollectiveContext>?]>([
    ['op', allReduce('sum'), allReduce('max'), 'op max'],
    ['count', allReduce('sum', 8), allReduce('sum', 6), 'count 6'],
    ['dtype', allReduce('sum', 8, 'f32'), allReduce('sum', 8, 'i32'), 'I32'],
    ['root', broadcast(0), broadcast(1), 'root 1'],
    ['ring order', allReduce('sum'), allReduce('sum'), 'ring 0,2,1,3', { ringOrder: [0, 2, 1, 3] }],
    ['algorithm', allReduce('sum'), allReduce('sum', 8, 'f32', 'recursive-doubling'), 'recursive-doubling'],
  ])('a different %s at rank 2 of 4 is named at once, with both descriptors, and aborts the job', async (_, theirs, odd, oddText, oddContext) => {
    const scheduler = new VirtualTimeScheduler();
    const { ranks, traffic } = memoryJob(4, { scheduler, agreement: 'mesh', timeoutMs: 60_000, contextOf: (rank) => (rank === 2 ? (oddContext ?? {}) : {}) });
    const failures: { at: number; error: Error }[] = [];
    const outcomes = Promise.allSettled(
      ranks.map(({ links, context }) => {
        const call = links.rank === 2 ? odd : theirs;
        const run = runRow(call.collective, jsRow(call.collective, call.row), links, call.request(links.rank) as never, context) as Observable<unknown>;
        return lastValueFrom(run.pipe(tap({ error: (error: Error) => failures.push({ at: scheduler.now(), error }) })), { defaultValue: undefined });
      }),
    );
    await Promise.resolve();
    scheduler.flush();
    await outcomes;
    // Found at once, by rank 2 or a ring neighbour of it, each naming the pair it compared: rank
    // 2 and that neighbour, the lower first, each with its own descriptor.
    const found = failures.filter(({ error }) => error.name === 'ProtocolError');
    expect(found.length).toBeGreaterThan(0);
    for (const { at, error } of found) {
      expect(at).toBe(0);
      const parts = MISMATCH.exec(error.message);
      expect(parts, error.message).not.toBeNull();
      const [, first, firstDescriptor, second, secondDescriptor] = parts!;
      expect([Number(first), Number(second)]).toContain(2);
      expect(Number(first)).toBeLessThan(Number(second));
      expect(Number(first) === 2 ? firstDescriptor : secondDescriptor).toContain(oddText);
      expect(Number(first) === 2 ? secondDescriptor : firstDescriptor).not.toContain(oddText);
    }
    // Every finder ended the job with its text; a rank that did not find it was told within the
    // abort's grace, long before the timeout (or ended its call first, having compared only with
    // ranks that agree with it: docs/protocol.md 9.9).
    expect(traffic.aborts.map((abort) => abort.reason).sort()).toEqual(found.map(({ error }) => error.message).sort());
    for (const { at, error } of failures.filter((failure) => !found.includes(failure))) {
      expect(at).toBeLessThanOrEqual(COLLECTIVE_RESPONSE_GRACE_MS);
      expect(found.map(({ error: finder }) => `collective coordinator aborted: rank ${traffic.aborts.find((abort) => abort.reason === finder.message)!.rank} aborted: ${finder.message}`)).toContain(error.message);
    }
  });

  it('a silent rank is named at exactly the timeout (virtual time) by the ranks that wait for it, and the job is aborted', async () => {
    const scheduler = new VirtualTimeScheduler();
    const { ranks, traffic } = memoryJob(4, { scheduler, agreement: 'mesh', timeoutMs: 5_000 });
    const failedAt: number[] = [];
    const row = jsRow('allReduce', 'ring');
    const waiting = [0, 1, 2].map((rank) =>
      lastValueFrom(
        runRow('allReduce', row, ranks[rank]!.links, { view: viewTensor(new Float32Array(8)), op: 'sum' }, ranks[rank]!.context).pipe(tap({ error: () => failedAt.push(scheduler.now()) })),
      ).then(
        () => null,
        (error: Error) => error,
      ),
    );
    await Promise.resolve();
    scheduler.flush();
    const errors = await Promise.all(waiting);
    // Each rank names whom it still waits for: rank 0 its predecessor on the ring, rank 3, whose
    // header never came; ranks 1 and 2, which hear only from their predecessors (whose headers
    // came), the ring's steps held up behind it.
    expect(failedAt).toEqual([5_000, 5_000, 5_000]);
    expect(errors.map((error) => error!.message)).toEqual([0, 1, 2].map((rank) => `rank ${rank} collective 0 (AllReduce) on the direct peer mesh; missing ranks [${(rank + 3) % 4}] timed out`));
    expect(traffic.aborts[0]!.reason).toMatch(/on the direct peer mesh; missing ranks \[3\] timed out$/);
  });

  it('names the silent rank itself, not the ranks held up behind it whose headers came (recursive doubling, 4 ranks)', async () => {
    const scheduler = new VirtualTimeScheduler();
    const { ranks } = memoryJob(4, { scheduler, agreement: 'mesh', timeoutMs: 5_000 });
    const row = jsRow('allReduce', 'recursive-doubling');
    const messages: string[] = [];
    for (const rank of [0, 1, 2]) {
      runRow('allReduce', row, ranks[rank]!.links, { view: viewTensor(new Float32Array(8)), op: 'sum' }, ranks[rank]!.context).subscribe({ error: (error: Error) => messages.push(error.message) });
    }
    await Promise.resolve();
    scheduler.flush();
    // Rank 0's second step waits on rank 2, which waits on rank 3: rank 0 names rank 3 alone.
    expect(messages).toContain('rank 0 collective 0 (AllReduce) on the direct peer mesh; missing ranks [3] timed out');
    for (const message of messages) expect(message).toMatch(/missing ranks \[3\] timed out$/);
  });

  it('takes no coordinator round, and sends each peer its header alone once, ahead of the pieces', async () => {
    const { ranks, traffic } = memoryJob(3, { agreement: 'mesh', scheduler: new VirtualTimeScheduler(), pieceBytes: 8 });
    const row = jsRow('allReduce', 'ring');
    const results = await Promise.all(ranks.map(({ links, context }) => lastValueFrom(runRow('allReduce', row, links, { view: viewTensor(Int32Array.of(1, 2, 3, links.rank)), op: 'sum' }, context))));
    for (const result of results) expect(Array.from(new Int32Array(result.buffer))).toEqual([3, 6, 9, 3]);
    expect(traffic.coordinated).toBe(0);
    const headers = traffic.messages.filter((message) => message.tag === headerTag(0n));
    // The ring in rank order: each rank's schedule peer is its successor, so one header each.
    expect(headers.map((message) => `${message.from}>${message.to} ${message.bytes}`).sort()).toEqual(['0>1 32', '1>2 32', '2>0 32']);
    for (const header of headers) expect(traffic.messages.filter((message) => message.from === header.from && message.to === header.to).indexOf(header)).toBe(0);
  });
});

describe('no silent wait (property)', () => {
  const rows = (Object.keys(ALGORITHMS) as CollectiveName[]).flatMap((collective) =>
    (ALGORITHMS[collective] as readonly AlgorithmRow<CollectiveName>[]).filter((row) => row.plane === 'js' && row.schedule !== undefined && row.family !== 'hierarchical').map((row) => ({ collective, row })),
  );
  /** A request of `count` elements per rank share (so every rank's tensor divides by W). */
  const requestOf = (collective: CollectiveName, worldSize: number, count: number, dtype: 'f32' | 'i32', root: number) => {
    if (collective === 'barrier') return {};
    const elements = worldSize * count;
    return { view: viewTensor(dtype === 'f32' ? new Float32Array(elements) : new Int32Array(elements)), op: 'sum', root };
  };

  it('every JS row, worlds 2..9: a rank that differs in count, type, root or collective is named at once (virtual time 0), never left to time out', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.record({ at: fc.nat({ max: rows.length - 1 }), worldSize: fc.integer({ min: 2, max: 9 }), odd: fc.nat(), how: fc.constantFrom('count', 'dtype', 'root', 'collective'), count: fc.integer({ min: 1, max: 5 }) }),
        async ({ at, worldSize, odd, how, count }) => {
          const { collective, row } = rows[at]!;
          const oddRank = odd % worldSize;
          const rooted = collective === 'broadcast' || collective === 'reduce' || collective === 'gather';
          // Each difference where the collective has it; otherwise the odd rank calls another collective.
          const kind = collective === 'barrier' || (how === 'root' && !rooted) ? 'collective' : how;
          const scheduler = new VirtualTimeScheduler();
          const { ranks } = memoryJob(worldSize, { scheduler, agreement: 'mesh', timeoutMs: 60_000 });
          const failures: { at: number; error: Error }[] = [];
          const outcomes = Promise.allSettled(
            ranks.map(({ links, context }) => {
              const differs = links.rank === oddRank;
              const call =
                differs && kind === 'collective'
                  ? { collective: collective === 'barrier' ? ('allReduce' as const) : ('barrier' as const), row: collective === 'barrier' ? 'ring' : 'dissemination' }
                  : { collective, row: row.name };
              const request = requestOf(call.collective, worldSize, differs && kind === 'count' ? count + 1 : count, differs && kind === 'dtype' ? 'i32' : 'f32', differs && kind === 'root' ? 1 : 0);
              const run = runRow(call.collective, jsRow(call.collective, call.row), links, request as never, context) as Observable<unknown>;
              return lastValueFrom(run.pipe(tap({ error: (error: Error) => failures.push({ at: scheduler.now(), error }) })), { defaultValue: undefined });
            }),
          );
          await Promise.resolve();
          scheduler.flush();
          await outcomes;
          const found = failures.filter(({ error }) => error.name === 'ProtocolError');
          expect(found.length, `${collective} ${row.name} W=${worldSize} rank ${oddRank} ${kind}`).toBeGreaterThan(0);
          for (const { at: when, error } of found) {
            expect(when).toBe(0);
            expect(error.message).toMatch(new RegExp(`^collective sequence 0 mismatch: rank \\d submitted \\{.*\\}, rank \\d submitted \\{.*\\}$`));
            expect(error.message).toContain(`rank ${oddRank} submitted`);
          }
          for (const { at: when, error } of failures) {
            expect(error.name).not.toBe('TimeoutError');
            expect(when).toBeLessThanOrEqual(COLLECTIVE_RESPONSE_GRACE_MS);
          }
        },
      ),
      { numRuns: 80 },
    );
  });
});

describe('headerPeers, headerAlone, checkHeader', () => {
  it('sends to the schedule\'s peers and the successor, expects from its peers and the predecessor; none alone', () => {
    const schedule = ringAllReduce({ rank: 1, worldSize: 4, count: 8, width: 4, op: 'sum', root: null, ringOrder: [0, 2, 1, 3], ringChannels: 1, inPlace: false });
    expect(headerPeers(schedule, 1, 4)).toEqual({ to: [2, 3], from: [0, 2] });
    expect(headerPeers(schedule, 0, 1)).toEqual({ to: [], from: [] });
  });

  it('is the native plane\'s header alone (label 0xff03ffff) and names a peer at another number or with another descriptor', () => {
    const own = { opcode: Opcode.AllReduce, elementType: ElementType.F32, rootRank: 0xffffffff, elementCount: 2, reduceOp: 1, layoutHash: 0n };
    const header = headerAlone({ own, number: 0n });
    expect(Buffer.from(header).toString('hex')).toBe('0b0b0100ffffffff02000000000000000000000000000000' + '00000000' + 'ffff03ff');
    expect(() => checkHeader(header, 1, 0, { own, number: 0n })).not.toThrow();
    expect(() => checkHeader(header, 1, 0, { own, number: 1n })).toThrow('rank 1 sent mesh collective 0 where rank 0 is at 1');
    const theirs = { ...own, reduceOp: 4 };
    expect(() => checkHeader(headerAlone({ own: theirs, number: 0n }), 1, 0, { own, number: 0n })).toThrow(
      `collective sequence 0 mismatch: rank 0 submitted ${describeOperation(own)}, rank 1 submitted ${describeOperation(theirs)}`,
    );
    expect(() => checkHeader(header.subarray(0, 24), 1, 0, { own, number: 0n })).toThrow('rank 1 sent collective 0 (AllReduce) an agreement header of 24 bytes, where rank 0 expects 32');
  });
});
