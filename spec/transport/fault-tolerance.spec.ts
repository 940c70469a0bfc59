import { describe, expect, it } from 'vitest';
import { resolveSessionOptions } from '../../lib/session/session-options.js';
import { resolveFaultTolerance } from '../../lib/transport/fault-tolerance.js';

describe('GX1_FAULT_TOLERANT / faultTolerant', () => {
  it('the option wins over the variable; 1/true and 0/false (any case), default off', () => {
    expect(resolveFaultTolerance(undefined, undefined)).toBe(false);
    expect(resolveFaultTolerance(undefined, ' 1 ')).toBe(true);
    expect(resolveFaultTolerance(undefined, 'TRUE')).toBe(true);
    expect(resolveFaultTolerance(undefined, '0')).toBe(false);
    expect(resolveFaultTolerance(undefined, 'false')).toBe(false);
    expect(resolveFaultTolerance(false, '1')).toBe(false);
    expect(resolveFaultTolerance(true, '0')).toBe(true);
  });

  it('anything else is refused, naming the setting and the value', () => {
    expect(() => resolveFaultTolerance(undefined, 'yes')).toThrow('GX1_FAULT_TOLERANT must be 1 or 0 (true or false), got "yes"');
    expect(() => resolveFaultTolerance('1' as unknown as boolean, undefined)).toThrow('faultTolerant must be true or false, got "1"');
  });

  it('a fault-tolerant session takes the data plane as any session does (native where offered)', () => {
    const base = { coordinator: '127.0.0.1:1', uniqueId: '00112233445566778899aabbccddeeff', rank: 0, worldSize: 2 };
    const available = resolveSessionOptions(base, {}).dataPlane;
    expect(resolveSessionOptions({ ...base, faultTolerant: true }, {}).dataPlane).toBe(available);
    expect(resolveSessionOptions(base, { GX1_FAULT_TOLERANT: '1' }).faultTolerant).toBe(true);
    expect(resolveSessionOptions({ ...base, faultTolerant: true, dataPlane: 'js' }, {}).dataPlane).toBe('js');
  });
});
