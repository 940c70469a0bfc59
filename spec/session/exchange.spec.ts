/** session.exchange: the reference design's raw collective, with a layout hash in the agreement. */
import { afterEach, describe, expect, it } from 'vitest';
import { ElementType } from '../../lib/protocol/element-type.js';
import { Opcode } from '../../lib/protocol/opcode.js';
import { rejection, startJob, type TestJob } from '../helpers/job.js';

const jobs: TestJob[] = [];
afterEach(async () => {
  await Promise.all(jobs.splice(0).map((job) => job.dispose()));
});

describe('session.exchange', () => {
  for (const transport of ['tcp_host_staged', 'tcp_peer'] as const) {
    it(`${transport}: routes a raw all-gather with a layout hash; every rank gets the response frame`, async () => {
      const job = await startJob(3, { transport });
      jobs.push(job);
      const frames = await Promise.all(
        job.sessions.map((session) => session.exchange({ opcode: Opcode.AllGather, elementType: 'u8', count: 2, layoutHash: 0xabcn }, Uint8Array.of(session.rank, 7))),
      );
      for (const [rank, frame] of frames.entries()) {
        expect(frame.header.opcode).toBe(Opcode.AllGather);
        expect(frame.header.destinationRank).toBe(rank);
        expect(Array.from(frame.payload)).toEqual([0, 7, 1, 7, 2, 7]);
      }
      // Built-in collectives go on in order after it.
      expect(await Promise.all(job.sessions.map((session) => session.allReduce(Int32Array.of(1))))).toEqual(job.sessions.map(() => Int32Array.of(3)));
    });
  }

  it('ranks whose layouts differ fail at the agreement, named with both descriptors', async () => {
    const job = await startJob(2);
    jobs.push(job);
    const errors = await Promise.all(
      job.sessions.map((session) => rejection(session.exchange({ opcode: Opcode.Barrier, elementType: ElementType.None, count: 0, layoutHash: BigInt(session.rank + 1) }))),
    );
    for (const error of errors) expect(error.message).toMatch(/collective sequence 0 mismatch: rank 0 submitted \{Barrier None root ANY count 0 op none layout 1\}, rank 1 submitted \{Barrier None root ANY count 0 op none layout 2\}/);
  });

  it('refuses what is not a raw collective before sending anything', async () => {
    const job = await startJob(1);
    jobs.push(job);
    const [session] = job.sessions;
    expect((await rejection(session!.exchange({ opcode: Opcode.Send, elementType: 'u8', count: 0 }))).message).toBe('exchange opcode Send is not a collective');
    expect((await rejection(session!.exchange({ opcode: Opcode.Gather, elementType: 'u8', count: 1, root: 3 }, Uint8Array.of(1)))).code).toBe('INVALID_CONFIGURATION');
    expect((await rejection(session!.exchange({ opcode: Opcode.Barrier, elementType: 'u8', count: 0, layoutHash: -1n }))).message).toContain('layout hash -1');
    await session!.barrier();
  });
});
