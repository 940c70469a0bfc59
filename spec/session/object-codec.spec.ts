/** The object messages' codec: values as v8 serializations, refusals as notices every receiver turns into the same typed error. */
import { describe, expect, it } from 'vitest';
import { ConfigurationError, ObjectTooLargeError, UnserializableObjectError } from '../../lib/errors.js';
import { contribute, decodeObject, encodeObject } from '../../lib/session/object-codec.js';

describe('object codec', () => {
  it('refuses a value over the limit, naming rank, size and limit', () => {
    const error = (() => {
      try {
        encodeObject(new Uint8Array(100), 3, 64, 'sendObject');
      } catch (thrown) {
        return thrown;
      }
      throw new Error('expected a refusal');
    })();
    expect(error).toBeInstanceOf(ObjectTooLargeError);
    expect(error).toMatchObject({ code: 'OBJECT_TOO_LARGE', rank: 3, limit: 64 });
    expect((error as ObjectTooLargeError).bytes).toBeGreaterThan(100);
  });

  it('a refusal notice decodes, on another rank, to the same error as the refusing rank has', () => {
    for (const value of [new Uint8Array(100), { f: () => 1 }]) {
      const { bytes, refusal } = contribute(value, 2, 64, 'allGatherObject');
      expect(refusal).not.toBeNull();
      expect(bytes[0]).toBe(0x00);
      let decoded: unknown;
      try {
        decodeObject(bytes, 2, 'allGatherObject');
      } catch (error) {
        decoded = error;
      }
      expect(decoded).toBeInstanceOf(refusal!.constructor);
      expect((decoded as Error).message).toBe(refusal!.message);
    }
    expect(contribute({ f: () => 1 }, 2, 64, 'gatherObject').refusal).toBeInstanceOf(UnserializableObjectError);
  });

  it('a serialization starts with v8 version tag 0xFF, never a notice byte', () => {
    for (const value of [undefined, null, 0, '', [], new Map()]) expect(contribute(value, 0, 1 << 20, 'x').bytes[0]).toBe(0xff);
  });

  it('bytes that are no serialization are a configuration error naming the sender and tag', () => {
    expect(() => decodeObject(Uint8Array.of(1, 2, 3), 4, 'receiveObject', 7n)).toThrow(ConfigurationError);
    expect(() => decodeObject(Uint8Array.of(1, 2, 3), 4, 'receiveObject', 7n)).toThrow(/^receiveObject: the message from rank 4 with tag 7 is not a serialized value/);
  });
});
