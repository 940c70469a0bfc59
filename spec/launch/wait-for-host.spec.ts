import { describe, expect, it } from 'vitest';
import { waitUntilResolvable } from '../../lib/launch/wait-for-host.js';

describe('waitUntilResolvable', () => {
  it('returns at once for addresses and names that resolve', async () => {
    await waitUntilResolvable('127.0.0.1', 1_000);
    await waitUntilResolvable('::1', 1_000);
    await waitUntilResolvable('localhost', 1_000);
  });

  it('retries a name that does not resolve until the timeout, then names it', async () => {
    const started = Date.now();
    await expect(waitUntilResolvable('train-0.train.invalid', 600)).rejects.toThrow(
      /^cannot resolve the coordinator host "train-0\.train\.invalid" \((ENOTFOUND|EAI_AGAIN), retried for 600 ms\); check GX1_COORDINATOR_HOST/,
    );
    expect(Date.now() - started).toBeGreaterThanOrEqual(300);
  });
});
