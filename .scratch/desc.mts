import { encodeDescriptor } from '/work/main/lib/protocol/descriptor-codec.ts';
import { descriptorOf } from '/work/main/lib/collectives/mesh-exchange.ts';
const b = new Uint8Array(32);
encodeDescriptor(descriptorOf({ opcode: 11, elementType: 11, elementCount: 2, reduceOp: 1 }, ''), 0n, b);
console.log(Buffer.from(b).toString('hex'));
