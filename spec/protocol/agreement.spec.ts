import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { ConfigurationError, ProtocolError } from '../../lib/errors.js';
import {
  ANY_RANK,
  COLLECTIVE_OPCODES,
  CollectiveAgreement,
  describeOperation,
  ElementType,
  MAX_U64,
  Opcode,
  REDUCE_OPS,
  type OperationDescriptor,
} from '../../lib/protocol/index.js';
import { arbAnyType, arbReduceOp, arbU64 } from '../../lib/testing/index.js';

const arbDescriptor: fc.Arbitrary<OperationDescriptor> = fc.record({
  opcode: fc.constantFrom(...COLLECTIVE_OPCODES),
  elementType: arbAnyType,
  rootRank: fc.oneof(fc.constant(ANY_RANK), fc.nat(15)),
  elementCount: fc.oneof(fc.nat(1 << 20), fc.constant(Number.MAX_SAFE_INTEGER)),
  reduceOp: arbReduceOp,
  layoutHash: arbU64,
});

/** A world size and a random submission order (a permutation of its ranks). */
const arbWorldOrder = fc
  .integer({ min: 1, max: 16 })
  .chain((worldSize) => fc.shuffledSubarray([...Array(worldSize).keys()], { minLength: worldSize, maxLength: worldSize }).map((order) => ({ worldSize, order })));

const FIELDS = ['opcode', 'elementType', 'rootRank', 'elementCount', 'reduceOp', 'layoutHash'] as const;
type Field = (typeof FIELDS)[number];

/** `descriptor` with exactly one field changed to another valid value. */
function differIn(descriptor: OperationDescriptor, field: Field): OperationDescriptor {
  const opcodes = [...COLLECTIVE_OPCODES];
  switch (field) {
    case 'opcode':
      return { ...descriptor, opcode: opcodes[(opcodes.indexOf(descriptor.opcode) + 1) % opcodes.length]! };
    case 'elementType':
      return { ...descriptor, elementType: ((descriptor.elementType + 1) % (ElementType.F64 + 1)) as ElementType };
    case 'rootRank':
      return { ...descriptor, rootRank: descriptor.rootRank === ANY_RANK ? 0 : ANY_RANK };
    case 'elementCount':
      return { ...descriptor, elementCount: descriptor.elementCount === 0 ? 1 : descriptor.elementCount - 1 };
    case 'reduceOp':
      return { ...descriptor, reduceOp: (descriptor.reduceOp + 1) % (REDUCE_OPS.length + 1) };
    case 'layoutHash':
      return { ...descriptor, layoutHash: descriptor.layoutHash ^ 1n };
  }
}

function protocolError(run: () => unknown): ProtocolError {
  try {
    run();
  } catch (error) {
    expect(error).toBeInstanceOf(ProtocolError);
    expect((error as ProtocolError).code).toBe('PROTOCOL');
    return error as ProtocolError;
  }
  throw new Error('expected a ProtocolError');
}

describe('CollectiveAgreement', () => {
  it('completes a round exactly when the last rank submits, whatever the order', () => {
    fc.assert(
      fc.property(arbWorldOrder, fc.array(arbDescriptor, { minLength: 1, maxLength: 4 }), ({ worldSize, order }, rounds) => {
        const agreement = new CollectiveAgreement(worldSize);
        rounds.forEach((descriptor, round) => {
          const sequence = BigInt(round);
          expect(agreement.nextSequence()).toBe(sequence);
          order.forEach((rank, index) => {
            const completed = agreement.submit(rank, sequence, { ...descriptor });
            expect(completed).toBe(index === order.length - 1);
            // The sequence advances once, on completion only.
            expect(agreement.nextSequence()).toBe(completed ? sequence + 1n : sequence);
          });
        });
        expect(agreement.nextSequence()).toBe(BigInt(rounds.length));
      }),
      { numRuns: 200 },
    );
  });

  it('rejects any single differing descriptor field, naming both ranks', () => {
    fc.assert(
      fc.property(
        arbWorldOrder.filter(({ worldSize }) => worldSize >= 2),
        arbDescriptor,
        fc.constantFrom(...FIELDS),
        fc.nat(),
        ({ order }, descriptor, field, pick) => {
          const agreement = new CollectiveAgreement(order.length);
          const position = 1 + (pick % (order.length - 1));
          for (const rank of order.slice(0, position)) agreement.submit(rank, 0n, descriptor);
          const odd = order[position]!;
          const other = differIn(descriptor, field);
          const error = protocolError(() => agreement.submit(odd, 0n, other));
          const firstRank = Math.min(...order.slice(0, position));
          expect(error.message).toBe(
            `collective sequence 0 mismatch: rank ${firstRank} submitted ${describeOperation(descriptor)}, ` +
              `rank ${odd} submitted ${describeOperation(other)}`,
          );
          // A refused submission changes nothing: the round is still open at the same sequence.
          expect(agreement.nextSequence()).toBe(0n);
        },
      ),
      { numRuns: 300 },
    );
  });

  it('describes every descriptor field in a mismatch', () => {
    const descriptor: OperationDescriptor = { opcode: Opcode.AllReduce, elementType: ElementType.F32, rootRank: ANY_RANK, elementCount: 7, reduceOp: 1, layoutHash: MAX_U64 };
    expect(describeOperation(descriptor)).toBe('{AllReduce F32 root ANY count 7 op sum layout 18446744073709551615}');
    expect(describeOperation({ ...descriptor, rootRank: 2, reduceOp: 0 })).toBe('{AllReduce F32 root 2 count 7 op none layout 18446744073709551615}');
  });

  it('rejects a rank submitting twice in one round, naming the rank', () => {
    fc.assert(
      fc.property(arbWorldOrder.filter(({ worldSize }) => worldSize >= 2), arbDescriptor, fc.nat(), ({ order }, descriptor, pick) => {
        const agreement = new CollectiveAgreement(order.length);
        const submitted = order.slice(0, 1 + (pick % (order.length - 1)));
        for (const rank of submitted) agreement.submit(rank, 0n, descriptor);
        const again = submitted[pick % submitted.length]!;
        expect(protocolError(() => agreement.submit(again, 0n, descriptor)).message).toBe(`rank ${again} submitted collective sequence 0 twice`);
      }),
      { numRuns: 100 },
    );
  });

  it('rejects a wrong sequence, naming the rank and both sequences', () => {
    fc.assert(
      fc.property(arbWorldOrder, arbDescriptor, fc.nat(3), arbU64, fc.nat(), ({ worldSize, order }, descriptor, rounds, wrong, pick) => {
        const agreement = new CollectiveAgreement(worldSize);
        for (let round = 0; round < rounds; round++) for (const rank of order) agreement.submit(rank, BigInt(round), descriptor);
        const expected = BigInt(rounds);
        const sequence = wrong === expected ? expected + 1n : wrong;
        const rank = order[pick % order.length]!;
        expect(protocolError(() => agreement.submit(rank, sequence, descriptor)).message).toBe(
          `rank ${rank} submitted collective sequence ${sequence}, expected ${expected}`,
        );
        expect(agreement.nextSequence()).toBe(expected);
      }),
      { numRuns: 100 },
    );
  });

  it('rejects ranks outside the world and worlds outside 1..2^32-1', () => {
    const agreement = new CollectiveAgreement(3);
    const descriptor: OperationDescriptor = { opcode: Opcode.Barrier, elementType: ElementType.None, rootRank: ANY_RANK, elementCount: 0, reduceOp: 0, layoutHash: 0n };
    for (const rank of [3, -1, 1.5, ANY_RANK]) {
      expect(protocolError(() => agreement.submit(rank, 0n, descriptor)).message).toBe(`agreement rank ${rank} is outside world size 3`);
    }
    for (const worldSize of [0, -1, 1.5, 2 ** 32]) expect(() => new CollectiveAgreement(worldSize)).toThrow(ConfigurationError);
  });

  it('agrees with a world of one on every submission', () => {
    const agreement = new CollectiveAgreement(1);
    const descriptor: OperationDescriptor = { opcode: Opcode.AllToAllV, elementType: ElementType.U8, rootRank: ANY_RANK, elementCount: 0, reduceOp: 0, layoutHash: 0n };
    for (let sequence = 0n; sequence < 5n; sequence++) expect(agreement.submit(0, sequence, descriptor)).toBe(true);
    expect(agreement.nextSequence()).toBe(5n);
  });
});
