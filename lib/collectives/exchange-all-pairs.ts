import type { Observable } from 'rxjs';
import type { OperationDescriptor } from '../protocol/agreement.js';
import type { Links } from '../transport/links/links.js';
import type { CollectiveContext } from './algorithm.js';
import { agreementMessage, AgreementInbox, bytesShape, EXCHANGE_TAG_PREFIX, runExchange } from './exchange-message.js';
import { pieceTag } from './peer-data.js';

/**
 * The all-pairs mesh exchange: every rank sends every other rank its agreement message and checks
 * each one it receives. One hop between any two ranks; W(W-1) messages, so it serves small worlds
 * (2 ranks: one message each way).
 */
export function exchangeAllPairs(links: Links, context: CollectiveContext, own: OperationDescriptor, data: Uint8Array, number: bigint): Observable<Uint8Array[]> {
  const message = agreementMessage(own, number, data, context.scratch);
  const tag = pieceTag(EXCHANGE_TAG_PREFIX, number, 0, 0, 0);
  const inbox = new AgreementInbox(links, own, number, data);
  const { peers } = inbox;
  const round = () => [
    ...peers.map((peer) => ({ run: links.send(0, peer, tag, message, bytesShape(message)) })),
    ...peers.map((peer) => inbox.receive(peer, tag, deadline)),
  ];
  const deadline = { number, opcode: own.opcode, waitMs: context.timeoutMs(), missing: () => inbox.missing() };
  return runExchange(context, deadline, [round], () => inbox.parts, () => {
    context.scratch.give(message);
    inbox.release();
  });
}
