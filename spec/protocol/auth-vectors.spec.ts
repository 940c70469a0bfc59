/**
 * The authentication vectors (spec/vectors/auth.json, docs/protocol.md 8.4): each MAC from its
 * secret, nonces and claim, byte for byte, so another implementation can check its HMAC input.
 * The frames themselves are checked with every other vector (vectors.spec.ts).
 */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { acceptorMac, type AuthClaim, authContext, dialerMac, macMatches } from '../../lib/protocol/auth.js';

interface MacVector {
  name: string;
  secretUtf8: string;
  challengeNonce: string;
  responseNonce: string;
  claim: AuthClaim;
  context: string;
  dialerMac: string;
  acceptorMac: string;
}

const file = JSON.parse(readFileSync(new URL('../vectors/auth.json', import.meta.url), 'utf8')) as { macs: MacVector[] };
const bytes = (hex: string) => new Uint8Array(Buffer.from(hex, 'hex'));
const hex = (data: Uint8Array) => Buffer.from(data).toString('hex');

describe('authentication vectors', () => {
  it.each(file.macs.map((vector) => [vector.name, vector] as const))('%s: context and both MACs', (_, vector) => {
    const secret = new Uint8Array(Buffer.from(vector.secretUtf8, 'utf8'));
    const challenge = bytes(vector.challengeNonce);
    const response = bytes(vector.responseNonce);
    expect(authContext(vector.claim)).toBe(vector.context);
    expect(hex(dialerMac(secret, challenge, response, vector.claim))).toBe(vector.dialerMac);
    expect(hex(acceptorMac(secret, challenge, response, vector.claim))).toBe(vector.acceptorMac);
  });

  it('the MACs are HMAC-SHA256 over label, nonces and context, and differ per direction and claim', async () => {
    const { createHmac } = await import('node:crypto');
    const [vector] = file.macs;
    const expected = createHmac('sha256', vector!.secretUtf8)
      .update(Buffer.concat([Buffer.from('GX1-AUTH-1 dialer\0'), bytes(vector!.challengeNonce), bytes(vector!.responseNonce), Buffer.from(vector!.context)]))
      .digest('hex');
    expect(vector!.dialerMac).toBe(expected);
    const all = file.macs.flatMap((entry) => [entry.dialerMac, entry.acceptorMac]);
    expect(new Set(all).size).toBe(all.length);
    expect(macMatches(bytes(vector!.dialerMac), bytes(vector!.dialerMac))).toBe(true);
    expect(macMatches(bytes(vector!.dialerMac), bytes(vector!.acceptorMac))).toBe(false);
    expect(macMatches(bytes(vector!.dialerMac).subarray(1), bytes(vector!.dialerMac))).toBe(false);
  });
});
