/** Argument and lifecycle edges a user hits first: typed errors, never a crash or a silent success. */
import { afterEach, describe, expect, it } from 'vitest';
import { Coordinator } from '../../lib/coordinator/coordinator.js';
import { UniqueId } from '../../lib/protocol/unique-id.js';
import { rejection, startJob, type TestJob } from '../helpers/job.js';

const jobs: TestJob[] = [];
afterEach(async () => {
  await Promise.all(jobs.splice(0).map((job) => job.dispose()));
});

describe('Coordinator.listen', () => {
  it('refuses a port outside 0..65535 and an unknown transport with INVALID_CONFIGURATION', async () => {
    const uniqueId = UniqueId.random();
    const port = await rejection(Coordinator.listen({ port: 70000, uniqueId, worldSize: 1 }, {}));
    expect(port.code).toBe('INVALID_CONFIGURATION');
    expect(port.message).toBe('coordinator port 70000 is outside 0..65535');
    const transport = await rejection(Coordinator.listen({ uniqueId, worldSize: 1, transport: 'bogus' }, {}));
    expect(transport.code).toBe('INVALID_CONFIGURATION');
    expect(transport.message).toContain('bogus');
  });

  it('takes GX1_P2P_RAILS and GX1_COLLECTIVE_TRANSPORT where the options leave them out; options win', async () => {
    const uniqueId = UniqueId.random();
    const fromEnv = await Coordinator.listen({ uniqueId, worldSize: 1 }, { GX1_P2P_RAILS: '4', GX1_COLLECTIVE_TRANSPORT: 'tcp_peer' });
    expect([fromEnv.rails, fromEnv.transport]).toEqual([4, 'tcp_peer']);
    await fromEnv.close();
    const explicit = await Coordinator.listen({ uniqueId, worldSize: 1, rails: 2, transport: 'tcp_host_staged' }, { GX1_P2P_RAILS: '4', GX1_COLLECTIVE_TRANSPORT: 'tcp_peer' });
    expect([explicit.rails, explicit.transport]).toEqual([2, 'tcp_host_staged']);
    await explicit.close();
  });
});

describe('session arguments', () => {
  for (const transport of ['tcp_host_staged', 'tcp_peer'] as const) {
    it(`${transport}: null options are no options; an unknown dtype is INVALID_CONFIGURATION`, async () => {
      const job = await startJob(2, { transport });
      jobs.push(job);
      const [zero, one] = job.sessions;
      await Promise.all([zero!.send(1, 0, Int32Array.of(5), null), one!.receive(0, 0, { dtype: 'i32', count: 1 }, null)]);
      const dtype = await rejection(one!.receive(0, 1, { dtype: 'float' as never, count: 1 }));
      expect(dtype.code).toBe('INVALID_CONFIGURATION');
      expect(dtype.message).toBe('receive dtype "float" is not one of u8 i8 u16 i16 u32 i32 u64 i64 f16 bf16 f32 f64');
    });

    it(`${transport}: after the session failed, send and receive reject with that failure`, async () => {
      const job = await startJob(2, { transport });
      jobs.push(job);
      const [zero, one] = job.sessions;
      const pending = rejection(zero!.receive(1, 9, { dtype: 'u8', count: 1 }));
      await one!.abort('gone');
      const failure = await pending;
      expect(failure.code).toBe('REMOTE_ABORT');
      expect((await rejection(zero!.send(1, 2, Uint8Array.of(1)))).message).toBe(failure.message);
      expect((await rejection(zero!.receive(1, 2, { dtype: 'u8', count: 1 }))).message).toBe(failure.message);
    });
  }
});
