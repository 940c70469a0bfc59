import type { Observable } from 'rxjs';
import type { OperationDescriptor } from '../protocol/agreement.js';
import { decodeRelayedParts, encodeRelayedParts } from '../protocol/relay-codec.js';
import { COLLECTIVE_RESPONSE_GRACE_MS } from '../transport/collective-channel.js';
import type { Links } from '../transport/links/links.js';
import type { CollectiveContext } from './algorithm.js';
import { agreementMessage, AgreementInbox, bytesShape, EXCHANGE_TAG_PREFIX, exchangeReceive, runExchange } from './exchange-message.js';
import { pieceTag } from './peer-data.js';

/** The rank every relayed exchange goes through. */
export const HUB_RANK = 0;

/**
 * The relayed mesh exchange: every rank sends its agreement message to the hub (rank 0), which
 * checks each against its own (so all agree with all) and sends every rank all the data in one
 * reply. Two hops and 2(W-1) messages, where the all-pairs exchange takes one hop and W(W-1): the
 * coordinator's role in the staged path, played by a rank, with one process fewer to wake.
 *
 * The hub names the ranks that do not come within the session timeout and aborts the job with
 * that text; the others wait a grace longer so that text reaches them first, as a rank waits on
 * the coordinator (then they name the hub as missing).
 */
export function exchangeRelayed(links: Links, context: CollectiveContext, own: OperationDescriptor, data: Uint8Array, number: bigint): Observable<Uint8Array[]> {
  const { rank, worldSize } = links;
  const up = pieceTag(EXCHANGE_TAG_PREFIX, number, 0, 0, 0);
  const down = pieceTag(EXCHANGE_TAG_PREFIX, number, 0, 1, 0);
  if (rank !== HUB_RANK) {
    const message = agreementMessage(own, number, data, context.scratch);
    let replied: Uint8Array | null = null;
    let parts: Uint8Array[] = [];
    // The receive is posted before the send, so the reply never waits unmatched.
    const round = () => [
      {
        run: exchangeReceive(links, HUB_RANK, down, deadline),
        onValue: (reply: Uint8Array) => {
          replied = reply;
          parts = decodeRelayedParts(reply, worldSize);
        },
      },
      { run: links.send(0, HUB_RANK, up, message, bytesShape(message)) },
    ];
    const deadline = { number, opcode: own.opcode, waitMs: context.timeoutMs() + COLLECTIVE_RESPONSE_GRACE_MS, missing: () => (replied !== null ? [] : [HUB_RANK]) };
    return runExchange(context, deadline, [round], () => parts, () => {
      context.scratch.give(message);
      links.release(replied!);
    });
  }
  const inbox = new AgreementInbox(links, own, number, data);
  const { peers } = inbox;
  let message: Uint8Array | null = null;
  const gather = () => peers.map((peer) => inbox.receive(peer, up, deadline));
  const reply = () => {
    message = encodeRelayedParts(inbox.parts, (bytes) => context.scratch.take(bytes));
    return peers.map((peer) => ({ run: links.send(0, peer, down, message!, bytesShape(message!)) }));
  };
  const deadline = { number, opcode: own.opcode, waitMs: context.timeoutMs(), missing: () => inbox.missing() };
  return runExchange(context, deadline, [gather, reply], () => inbox.parts, () => {
    context.scratch.give(message!);
    inbox.release();
  });
}
