/**
 * The kit's fault points, restarts (torchrun's restart of the whole worker group, with each rank's
 * disk kept), the recorded history and the readable traffic.
 */
import fc from 'fast-check';
import { interval, timer } from 'rxjs';
import { describe, expect, it } from 'vitest';
import { previewPayload, simulateJob, type SimulatedRank } from '../../lib/testing/index.js';
import { ElementType } from '../../lib/protocol/element-type.js';

const job = { worldSize: 3, transport: 'tcp_peer', timeoutMs: 5_000 } as const;

/** Sums rank + 1 over the ranks `iterations` times, resuming from the disk's checkpoint. */
async function resumingSum(rank: SimulatedRank, iterations = 4): Promise<{ total: number; resumedAt: number }> {
  const saved = rank.disk.read<{ iteration: number; total: number }>('checkpoint') ?? { iteration: 0, total: 0 };
  let { total } = saved;
  for (let iteration = saved.iteration; iteration < iterations; iteration++) {
    const [sum] = await rank.allReduce(Int32Array.of(rank.rank + 1));
    total += sum!;
    rank.disk.write('checkpoint', { iteration: iteration + 1, total });
    await rank.faultPoint('saved');
  }
  return { total, resumedAt: saved.iteration };
}

describe('fault points', () => {
  it("a kill at a fault point's second occurrence: the rank stops there, the others fail naming it", async () => {
    const result = await simulateJob({ ...job, faults: [{ kind: 'kill', rank: 1, atPoint: 'saved', occurrence: 1 }] }, (rank) => resumingSum(rank));
    // Killed after its second all-reduce: two steps taken.
    expect(result.ranks[1]).toEqual({ rank: 1, status: 'killed', steps: 2 });
    for (const rank of [0, 2]) expect(result.ranks[rank]).toMatchObject({ status: 'threw', error: { message: expect.stringContaining('rank 1') } });
    expect(result.restarts).toEqual([]);
  });

  it('an abort at a fault point names it; a stall there passes virtual time', async () => {
    const aborted = await simulateJob({ ...job, faults: [{ kind: 'abort', rank: 2, atPoint: 'saved' }] }, (rank) => resumingSum(rank));
    for (const outcome of aborted.ranks) expect(outcome).toMatchObject({ status: 'threw', error: { code: 'REMOTE_ABORT', message: 'collective coordinator aborted: rank 2 aborted: injected at fault point "saved"' } });
    const stalled = await simulateJob({ ...job, faults: [{ kind: 'stall', rank: 0, atPoint: 'saved', occurrence: 3, ms: 4_000 }] }, (rank) => resumingSum(rank));
    for (const outcome of stalled.ranks) expect(outcome).toMatchObject({ status: 'returned', value: { total: 24 } });
    expect(stalled.virtualTimeMs).toBe(4_000);
  });

  it('a fault point needs a name', async () => {
    const result = await simulateJob(job, (rank) => rank.faultPoint(''));
    expect(result.ranks[0]).toMatchObject({ status: 'threw', error: { code: 'INVALID_CONFIGURATION', message: 'rank 0: faultPoint needs a name (a non-empty string), got ""' } });
  });
});

describe('restarts', () => {
  it('a kill restarts the whole job: every rank starts again from its disk, and the job ends right', async () => {
    const result = await simulateJob({ ...job, restarts: 2, faults: [{ kind: 'kill', rank: 1, atStep: 2 }] }, (rank) => resumingSum(rank));
    expect(result.restarts).toHaveLength(1);
    const [restart] = result.restarts;
    expect(restart).toMatchObject({ generation: 0, rank: 1, cause: 'killed at step 2' });
    // The worker group is stopped: no rank of generation 0 returned.
    expect(restart!.ranks.map((outcome) => outcome.status)).toEqual(['stopped', 'killed', 'stopped']);
    // Two iterations were saved; generation 1 resumes at the third, and each rank took only two steps.
    for (const outcome of result.ranks) expect(outcome).toMatchObject({ status: 'returned', value: { total: 24, resumedAt: 2 }, steps: 2 });
  });

  it('a fault strikes in its own generation only: the restarted job passes the step it was killed at', async () => {
    const result = await simulateJob({ ...job, restarts: 1, faults: [{ kind: 'kill', rank: 0, atStep: 1 }] }, async (rank) => {
      for (let step = 0; step < 3; step++) await rank.barrier();
      return rank.generation;
    });
    expect(result.restarts.map(({ cause }) => cause)).toEqual(['killed at step 1']);
    for (const outcome of result.ranks) expect(outcome).toMatchObject({ status: 'returned', value: 1, steps: 3 });
  });

  it('rank.generation counts the restarts; a fault names its generation; past the last restart a kill fails the job', async () => {
    const generations: number[] = [];
    const faults = [0, 1, 2].map((generation) => ({ kind: 'kill' as const, rank: 0, atStep: 0, generation }));
    const result = await simulateJob({ ...job, restarts: 2, faults }, async (rank) => {
      if (rank.rank === 2) generations.push(rank.generation);
      return resumingSum(rank);
    });
    expect(generations).toEqual([0, 1, 2]);
    expect(result.restarts.map(({ generation, rank, cause }) => ({ generation, rank, cause }))).toEqual([
      { generation: 0, rank: 0, cause: 'killed at step 0' },
      { generation: 1, rank: 0, cause: 'killed at step 0 of generation 1' },
    ]);
    expect(result.ranks[0]).toMatchObject({ status: 'killed', steps: 0 });
    for (const rank of [1, 2]) expect(result.ranks[rank]).toMatchObject({ status: 'threw', error: { message: expect.stringContaining('rank 0') } });
  });

  it('a rank whose program throws restarts the job too, as a worker that exits with an error does under torchrun', async () => {
    const result = await simulateJob({ ...job, restarts: 1 }, async (rank) => {
      if (rank.generation === 0 && rank.rank === 2) throw new Error('out of memory');
      await rank.barrier();
      return rank.generation;
    });
    expect(result.restarts.map(({ rank, cause }) => ({ rank, cause }))).toEqual([{ rank: 2, cause: 'threw Error: out of memory' }]);
    for (const outcome of result.ranks) expect(outcome).toMatchObject({ status: 'returned', value: 1 });
  });

  it("a stopped rank's process does nothing more: its writes never reach the disk, its timers stop", async () => {
    const ticks: string[] = [];
    const result = await simulateJob({ ...job, restarts: 1, faults: [{ kind: 'kill', rank: 1, atStep: 0 }] }, async (rank) => {
      if (rank.generation === 0 && rank.rank === 0) {
        interval(1_000, rank.clock).subscribe(() => ticks.push(`gen 0 at ${rank.now()}`));
        rank.disk.write('before', true);
        await rank.sleep(10_000); // the job restarts meanwhile
        rank.disk.write('after', true);
        return rank.disk.keys();
      }
      await rank.barrier();
      if (rank.generation === 1) await rank.sleep(20_000); // past the stopped rank's sleep
      return rank.disk.keys();
    });
    expect(result.restarts).toHaveLength(1);
    expect(result.virtualTimeMs).toBe(20_000);
    expect(result.ranks[0]).toMatchObject({ status: 'returned', value: ['before'] });
    expect(ticks).toEqual([]);
  });

  it('a communicator of a stopped rank gives nothing back to it', async () => {
    const seen: string[] = [];
    const result = await simulateJob({ ...job, restarts: 1, faults: [{ kind: 'kill', rank: 1, atStep: 0 }] }, async (rank) => {
      const all = await rank.group([0, 1, 2]);
      try {
        if (rank.rank === 1 && rank.generation === 0) await rank.barrier(); // killed here
        await all!.allReduce(Int32Array.of(1));
        seen.push(`gen ${rank.generation} rank ${rank.rank} returned`);
      } catch (error) {
        seen.push(`gen ${rank.generation} rank ${rank.rank} threw ${(error as Error).message}`);
      }
      return rank.generation;
    });
    expect(result.ranks.map((outcome) => outcome.status)).toEqual(['returned', 'returned', 'returned']);
    expect(seen.sort()).toEqual(['gen 1 rank 0 returned', 'gen 1 rank 1 returned', 'gen 1 rank 2 returned']);
  });

  it('restartDelayMs: the others run on until the agent stops them, and a newer checkpoint of theirs survives', async () => {
    const result = await simulateJob({ ...job, restarts: 1, restartDelayMs: 3_000, faults: [{ kind: 'kill', rank: 0, atPoint: 'started' }] }, async (rank) => {
      await rank.faultPoint('started');
      if (rank.generation === 0) {
        await rank.sleep(1_000);
        rank.disk.write('saved at', rank.now());
        await rank.sleep(5_000); // stopped at 3 s
        rank.disk.write('saved at', rank.now());
      }
      return rank.disk.read<number>('saved at') ?? null;
    });
    expect(result.restarts[0]).toMatchObject({ rank: 0, cause: 'killed at fault point "started"', virtualTimeMs: 3_000 });
    expect(result.ranks.map((outcome) => outcome.status === 'returned' && outcome.value)).toEqual([null, 1_000, 1_000]);
  });

  it('restartDelayMs: a failure restarts the job even when the others end within the delay', async () => {
    const result = await simulateJob({ ...job, restarts: 1, restartDelayMs: 1_000, faults: [{ kind: 'kill', rank: 1, atStep: 1 }] }, async (rank) => {
      for (let step = 0; step < 3; step++) await rank.barrier();
      return rank.generation;
    });
    expect(result.restarts.map(({ rank, cause }) => ({ rank, cause }))).toEqual([{ rank: 1, cause: 'killed at step 1' }]);
    for (const outcome of result.ranks) expect(outcome).toMatchObject({ status: 'returned', value: 1 });
  });

  it("a stopped generation's timers leave the clock with it: the next generation's time is its own", async () => {
    const result = await simulateJob({ ...job, restarts: 1, faults: [{ kind: 'kill', rank: 1, atStep: 0 }] }, async (rank) => {
      if (rank.generation === 0) {
        timer(50_000, rank.clock).subscribe();
        await rank.barrier();
      }
      if (rank.rank === 0) await new Promise(() => undefined); // stuck in generation 1
      return rank.generation;
    });
    expect(result.ranks.map((outcome) => outcome.status)).toEqual(['stuck', 'returned', 'returned']);
    // Found stuck at once, not after running the stopped generation's 50 s timer.
    expect(result.virtualTimeMs).toBe(0);
  });

  it('a program whose own timer never stops ends stuck at the horizon, not never', async () => {
    const result = await simulateJob({ ...job, worldSize: 2, horizonMs: 60_000 }, async (rank) => {
      interval(1_000, rank.clock).subscribe();
      if (rank.rank === 0) await new Promise(() => undefined);
      return rank.rank;
    });
    expect(result.ranks.map((outcome) => outcome.status)).toEqual(['stuck', 'returned']);
  });

  it('disk values are copies, as bytes on a disk are', async () => {
    const result = await simulateJob({ worldSize: 1, transport: 'tcp_peer' }, async (rank) => {
      const weights = Float32Array.of(1, 2);
      rank.disk.write('weights', weights);
      weights[0] = 9;
      const read = rank.disk.read<Float32Array>('weights')!;
      read[1] = 9;
      return Array.from(rank.disk.read<Float32Array>('weights')!);
    });
    expect(result.ranks[0]).toMatchObject({ status: 'returned', value: [1, 2] });
  });

  it('restarts and rank faults are checked: a fault that could never strike is refused, naming it', async () => {
    const refused = (options: Partial<Parameters<typeof simulateJob>[0]>, message: string) =>
      expect(simulateJob({ ...job, ...options }, async () => undefined)).rejects.toMatchObject({ code: 'INVALID_CONFIGURATION', message });
    await refused({ faults: [{ kind: 'kill', rank: 0, atStep: 0, generation: 1 }] }, 'simulateJob: fault {"kind":"kill","rank":0,"atStep":0,"generation":1} names generation 1, which never runs: the job has generations 0..0 (restarts: 0)');
    await refused({ faults: [{ kind: 'kill', rank: 3, atStep: 0 }] }, 'simulateJob: fault {"kind":"kill","rank":3,"atStep":0} names rank 3, outside world size 3');
    await refused({ faults: [{ kind: 'stall', rank: 0, ms: 5 } as never] }, 'simulateJob: fault {"kind":"stall","rank":0,"ms":5} needs one moment: atStep, or atPoint (with occurrence)');
    await refused({ faults: [{ kind: 'abort', rank: 0, atPoint: 'x', occurrence: -1 }] }, 'simulateJob: fault {"kind":"abort","rank":0,"atPoint":"x","occurrence":-1}: occurrence must be a whole number >= 0');
    await refused({ restartDelayMs: -1 }, 'simulateJob: restartDelayMs must be a finite number >= 0, got -1');
    await expect(simulateJob({ ...job, restarts: -1 }, async () => undefined)).rejects.toMatchObject({ code: 'INVALID_CONFIGURATION', message: 'simulateJob: restarts must be a whole number >= 0, got -1' });
    await expect(simulateJob({ ...job, restarts: 1, faultTolerant: true }, async () => undefined)).rejects.toMatchObject({
      code: 'INVALID_CONFIGURATION',
      message: 'simulateJob: restarts and faultTolerant are two answers to a killed rank (restart the job, or go on without it): choose one',
    });
  });
});

describe('the history', () => {
  it('records invoke and ok with the outputs; an operation that throws, or whose rank dies or sticks, ends in info', async () => {
    const result = await simulateJob({ ...job, restarts: 1, faults: [{ kind: 'kill', rank: 2, atPoint: 'mid-put' }] }, async (rank) => {
      if (rank.generation === 0 && rank.rank === 0) await rank.operation('fail', null, () => Promise.reject(new Error('no'))).catch(() => undefined);
      const total = await rank.operation('sum', rank.rank, async () => (await rank.allReduce(Int32Array.of(rank.rank)))[0]);
      await rank.operation('put', rank.rank, async () => {
        if (rank.generation === 0) await rank.faultPoint('mid-put');
        await rank.barrier();
      });
      return total;
    });
    expect(result.restarts).toHaveLength(1);
    const lines = result.history.map((event) => `${event.generation}:${event.rank} ${event.type} ${event.f} ${JSON.stringify(event.value) ?? ''}${event.note === undefined ? '' : ` (${event.note})`}`);
    // Generation 0: three sums invoked and returned 3; rank 0's failing operation; the puts, which the kill ends.
    expect(lines.filter((line) => line.startsWith('0:') && line.includes(' ok sum '))).toEqual(expect.arrayContaining(['0:0 ok sum 3', '0:1 ok sum 3', '0:2 ok sum 3']));
    expect(lines).toContain('0:0 info fail  (threw Error: no)');
    // Every put invoked in generation 0 ends in info: the kill ends rank 2's, the restart the others'.
    const putsInvoked = lines.filter((line) => line.startsWith('0:') && line.includes(' invoke put ')).map((line) => line.slice(0, 3));
    const putsEnded = lines.filter((line) => line.startsWith('0:') && line.includes(' info put ')).map((line) => line.slice(0, 3));
    expect(putsEnded.sort()).toEqual(putsInvoked.sort());
    expect(lines).toContain('0:2 info put  (killed)');
    for (const line of lines.filter((candidate) => candidate.startsWith('0:') && candidate.includes(' info put ') && !candidate.startsWith('0:2'))) expect(line).toMatch(/\(restarted\)$/);
    // Generation 1 ran clean.
    expect(lines.filter((line) => line.startsWith('1:') && line.includes(' ok '))).toHaveLength(6);
    expect(result.history.map((event) => event.index)).toEqual(result.history.map((_, index) => index));
  });
});

describe('the history, when a program moves on', () => {
  it('records copies: a program that changes what it passed later does not change its history', async () => {
    const result = await simulateJob({ ...job, worldSize: 1 }, async (rank) => {
      const input = [1, 2];
      const output = await rank.operation('put', input, async () => input);
      input[0] = 9;
      output[1] = 9;
    });
    expect(result.history.map(({ value }) => value)).toEqual([[1, 2], [1, 2]]);
  });

  it('an operation the program left running when it returned ends in info, saying so', async () => {
    const result = await simulateJob({ ...job, worldSize: 1 }, async (rank) => {
      void rank.operation('slow', 1, () => rank.sleep(1_000));
      await rank.operation('fast', 2, () => Promise.resolve('done'));
      return 'returned';
    });
    expect(result.history.map(({ type, f, value, note }) => [type, f, value, note])).toEqual([
      ['invoke', 'slow', 1, undefined],
      ['invoke', 'fast', 2, undefined],
      ['ok', 'fast', 'done', undefined],
      ['info', 'slow', undefined, 'returned first'],
    ]);
  });
});

describe('readable traffic', () => {
  it("each delivery's label names the message it delivers, in any interleaving (a link is FIFO)", async () => {
    await fc.assert(
      fc.asyncProperty(fc.scheduler(), async (scheduler) => {
        const result = await simulateJob({ worldSize: 2, transport: 'tcp_peer', scheduler }, async (rank) => {
          if (rank.rank === 0) for (const value of [100, 200, 300]) await rank.send(1, 7, Int32Array.of(value));
          else for (let message = 0; message < 3; message++) await rank.receive(0, 7, { dtype: 'i32', count: 1 });
        });
        expect(result.traffic.deliveries).toEqual(['0>1 rail 0 tag 7 #0 i32 [100]', '0>1 rail 0 tag 7 #1 i32 [200]', '0>1 rail 0 tag 7 #2 i32 [300]']);
      }),
      { numRuns: 20 },
    );
  });

  it("each message has its index on its link and a preview of its payload in the frame's dtype", async () => {
    const result = await simulateJob({ worldSize: 2, transport: 'tcp_peer' }, async (rank) => {
      if (rank.rank === 0) {
        await rank.send(1, 7, Int32Array.of(1, -2, 3));
        await rank.send(1, 7, Float64Array.from({ length: 10 }, (_, index) => index / 2));
      } else {
        await rank.receive(0, 7, { dtype: 'i32', count: 3 });
        await rank.receive(0, 7, { dtype: 'f64', count: 10 });
      }
    });
    expect(result.traffic.messages.map(({ index, preview }) => ({ index, preview }))).toEqual([
      { index: 0, preview: 'i32 [1, -2, 3]' },
      { index: 1, preview: 'f64 [0, 0.5, 1, 1.5, 2, 2.5, 3, 3.5, …] (10 elements)' },
    ]);
  });

  it('previews read half floats, 64-bit integers and unaligned payloads; bytes without a dtype in hex', () => {
    expect(previewPayload(ElementType.F16, Uint8Array.of(0x00, 0x3c, 0x00, 0xc0))).toBe('f16 [1, -2]');
    expect(previewPayload(ElementType.BF16, Uint8Array.of(0x80, 0x3f))).toBe('bf16 [1]');
    expect(previewPayload(ElementType.I64, new Uint8Array(new BigInt64Array([-5n]).buffer))).toBe('i64 [-5]');
    const unaligned = new Uint8Array(9);
    unaligned.set(new Uint8Array(Int32Array.of(7, 8).buffer), 1);
    expect(previewPayload(ElementType.I32, unaligned.subarray(1))).toBe('i32 [7, 8]');
    expect(previewPayload(ElementType.None, Uint8Array.from({ length: 10 }, (_, index) => index))).toBe('bytes 0001020304050607… (10 bytes)');
    expect(previewPayload(ElementType.I32, Uint8Array.of(1, 2, 3))).toBe('bytes 010203');
  });
});
