/**
 * A listener on a non-loopback address without a secret warns once per process, clearly: anyone
 * who reaches it and knows the unique id could join. Loopback, or a secret, says nothing.
 */
import { afterEach, describe, expect, it, vi } from 'vitest';
import { Coordinator } from '../../lib/coordinator/coordinator.js';
import { debugLog } from '../../lib/diagnostics/debug-log.js';
import { UniqueId } from '../../lib/protocol/unique-id.js';
import { generateSecret } from '../../lib/transport/job-secret.js';

const coordinators: Coordinator[] = [];
afterEach(async () => {
  vi.restoreAllMocks();
  await Promise.all(coordinators.splice(0).map((coordinator) => coordinator.close()));
});

async function listen(host: string, secret?: string): Promise<void> {
  coordinators.push(await Coordinator.listen({ host, port: 0, uniqueId: UniqueId.random(), worldSize: 1, ...(secret ? { secret } : {}) }, {}));
}

describe('no secret on a non-loopback address', () => {
  it('warns once, naming the address and the remedy; not on loopback, not with a secret', async () => {
    const warn = vi.spyOn(debugLog, 'warn').mockImplementation(() => undefined);
    await listen('127.0.0.1');
    await listen('0.0.0.0', generateSecret());
    expect(warn).not.toHaveBeenCalled();
    await listen('0.0.0.0');
    await listen('0.0.0.0');
    expect(warn).toHaveBeenCalledTimes(1);
    expect(warn.mock.calls[0]![0]).toMatch(/^\[RXCCL_NO_SECRET\] rxccl coordinator listens on 0\.0\.0\.0 without a job secret: anyone who can reach it .* Set GX1_SECRET or GX1_SECRET_FILE/);
  });
});
