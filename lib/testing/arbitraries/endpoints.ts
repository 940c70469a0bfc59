import fc from 'fast-check';
import { formatEndpoint, parseSocketAddress, type SocketAddressText } from '../../transport/peer-endpoint-config.js';

/** A direct peer endpoint, IPv4 or IPv6, in the canonical form a parsed one has (IPv6 compressed, lower case). */
export const arbEndpoint: fc.Arbitrary<SocketAddressText> = fc
  .record({ host: fc.oneof(fc.ipV4(), fc.ipV6()), port: fc.integer({ min: 1, max: 65535 }) })
  .map((endpoint) => parseSocketAddress('endpoint', formatEndpoint(endpoint)));

/** A rank's endpoints on `rails` rails: one shared by every rail, or one per rail. */
export function arbRailEndpoints(rails: number): fc.Arbitrary<SocketAddressText[]> {
  return fc.oneof(
    arbEndpoint.map((endpoint) => Array.from({ length: rails }, () => endpoint)),
    fc.array(arbEndpoint, { minLength: rails, maxLength: rails }),
  );
}
