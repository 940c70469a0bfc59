import { randomBytes } from 'node:crypto';
import { ConfigurationError } from '../errors.js';

/** The 16-byte identity of one job: every frame of a session carries it. */
export class UniqueId {
  static readonly BYTES = 16;
  /** Never written after construction: decoded headers share one instance (see `decodeHeader`). */
  readonly bytes: Uint8Array;

  private constructor(bytes: Uint8Array) {
    this.bytes = bytes;
  }

  static fromBytes(bytes: ArrayLike<number>): UniqueId {
    if (bytes.length !== UniqueId.BYTES) {
      throw new ConfigurationError(`unique id has ${bytes.length} bytes, expected ${UniqueId.BYTES}`);
    }
    // A copy: `slice` where it can (every decoded header comes here), `from` takes the iterator path.
    return new UniqueId(bytes instanceof Uint8Array ? bytes.slice() : Uint8Array.from(bytes));
  }

  /** Parses 32 hex digits (as `GX1_UNIQUE_ID` carries it). */
  static fromHex(hex: string): UniqueId {
    const text = hex.trim();
    if (!/^[0-9a-fA-F]{32}$/.test(text)) {
      throw new ConfigurationError(`unique id must be 32 hex digits, got ${JSON.stringify(hex)}`);
    }
    return new UniqueId(Uint8Array.from(Buffer.from(text, 'hex')));
  }

  static random(): UniqueId {
    return new UniqueId(new Uint8Array(randomBytes(UniqueId.BYTES)));
  }

  static from(value: UniqueId | string | ArrayLike<number>): UniqueId {
    if (value instanceof UniqueId) return value;
    if (typeof value === 'string') return UniqueId.fromHex(value);
    return UniqueId.fromBytes(value);
  }

  equals(other: UniqueId): boolean {
    return this === other || Buffer.compare(this.bytes, other.bytes) === 0;
  }

  /** Whether the 16 bytes at `offset` of `bytes` are this id's (no copy, no allocation). */
  isAt(bytes: Uint8Array, offset: number): boolean {
    const own = this.bytes;
    for (let index = 0; index < UniqueId.BYTES; index++) if (bytes[offset + index] !== own[index]) return false;
    return true;
  }

  toHex(): string {
    return Buffer.from(this.bytes).toString('hex');
  }

  toString(): string {
    return this.toHex();
  }
}
