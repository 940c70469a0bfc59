/** Wire codes of GX1 operations (byte 8 of the header). 0 is never valid. */
export enum Opcode {
  Join = 1,
  Ready = 2,
  PeerEndpoint = 3,
  Barrier = 4,
  SetTimeout = 5,
  Broadcast = 6,
  AllGather = 7,
  Gather = 8,
  Reduce = 9,
  Scatter = 10,
  AllReduce = 11,
  ReduceScatter = 12,
  AllToAll = 13,
  AllToAllV = 14,
  Send = 15,
  Receive = 16,
  Heartbeat = 17,
  Leave = 18,
  Abort = 19,
  /** First frame on a direct rank-to-rank link (tcp_peer): proves session, ranks and rail. */
  PeerHello = 20,
  /** Authentication (docs/protocol.md 8.4): the accepting side's fresh nonce, its first frame. */
  AuthChallenge = 21,
  /** The dialer's HMAC over the challenge and its claim, with its own nonce. */
  AuthResponse = 22,
  /** The accepting side's HMAC over both nonces: it knows the secret too. */
  AuthAccept = 23,
}

/** The highest opcode this implementation knows. */
export const LAST_OPCODE = Opcode.AuthAccept;

export function isOpcode(code: number): code is Opcode {
  return Number.isInteger(code) && code >= Opcode.Join && code <= LAST_OPCODE;
}

export function opcodeName(opcode: Opcode): string {
  return Opcode[opcode] ?? `unknown(${opcode})`;
}

/** Ordered operations the coordinator's collective loop sequences and routes. */
export const COLLECTIVE_OPCODES: ReadonlySet<Opcode> = new Set([
  Opcode.Barrier,
  Opcode.SetTimeout,
  Opcode.Broadcast,
  Opcode.AllGather,
  Opcode.Gather,
  Opcode.Reduce,
  Opcode.Scatter,
  Opcode.AllReduce,
  Opcode.ReduceScatter,
  Opcode.AllToAll,
  Opcode.AllToAllV,
]);
