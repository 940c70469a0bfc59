/**
 * Collective programs: sequences of collectives and point-to-point messages that every rank of a
 * world runs in the same order, with consistent shapes. `runProgram` performs one rank's part on a
 * session; `modelProgram` is what the oracle says every rank must get.
 */
import { dtypeWidth } from '../tensor.js';
import type { DType } from '../protocol/element-type.js';
import { type CollectiveCase, isHalf, type Outcome, outcomeOf, tensorOf } from './collective-case.js';
import { modelCollective } from './oracle.js';
import { type CollectiveSession, runCollective } from './run-collective.js';
import type { RankSession } from '../session/rank-session.js';

/** One message from `from` to `to` under `tag`: the sender's step returns nothing, the receiver's the bytes. */
export interface MessageCase {
  readonly kind: 'message';
  readonly dtype: DType;
  readonly from: number;
  readonly to: number;
  readonly tag: number;
  readonly bytes: Uint8Array;
}

/** One step of a drawn program: a collective, or a point-to-point message. */
export type ProgramStep = CollectiveCase | MessageCase;

/** What `runProgram` calls: the collectives plus send and receive. */
export type ProgramSession = CollectiveSession & Pick<RankSession, 'send' | 'receive'>;

/** Performs one step at `session`'s rank. */
export async function runStep(session: ProgramSession, step: ProgramStep): Promise<Outcome> {
  if (step.kind !== 'message') return runCollective(session, step);
  if (session.rank === step.from) {
    await session.send(step.to, step.tag, tensorOf(step.dtype, step.bytes, false));
    return { bytes: null };
  }
  if (session.rank !== step.to) return { bytes: null };
  return outcomeOf(await session.receive(step.from, step.tag, { dtype: step.dtype, count: step.bytes.length / dtypeWidth(step.dtype) }));
}

/** Performs every step in order at `session`'s rank; returns what each step gave back. */
export async function runProgram(session: ProgramSession, steps: readonly ProgramStep[]): Promise<Outcome[]> {
  const outcomes: Outcome[] = [];
  for (const step of steps) outcomes.push(await runStep(session, step));
  return outcomes;
}

/** What each rank must get from each step: `[rank][step]`. */
export function modelProgram(steps: readonly ProgramStep[], worldSize: number): Outcome[][] {
  const perStep = steps.map((step) => (step.kind === 'message' ? modelMessage(step, worldSize) : modelCollective(step, worldSize)));
  return Array.from({ length: worldSize }, (_, rank) => perStep.map((outcomes) => outcomes[rank]!));
}

function modelMessage(step: MessageCase, worldSize: number): Outcome[] {
  return Array.from({ length: worldSize }, (_, rank) =>
    rank === step.to ? outcomeOf(tensorOf(step.dtype, step.bytes, isHalf(step.dtype))) : { bytes: null },
  );
}
