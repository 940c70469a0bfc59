/**
 * A rank's error line: how `rxccl launch` learns why a rank failed, and which other ranks its
 * error blames (a rank killed by a signal among them is the job's root cause, not the survivor).
 */
import { describe, expect, it } from 'vitest';
import { RemoteAbortError } from '../../lib/errors.js';
import { parseRankErrorLine, rankErrorLine, ranksNamedBy } from '../../lib/launch/rank-error-line.js';

describe("a rank's error line", () => {
  it('reads back as CODE: message, on one line', () => {
    const line = rankErrorLine(new RemoteAbortError('direct peer rank 2 left', 'rank 0 aborted:\n  direct peer rank 2 left'));
    expect(line).toBe('rxccl: REMOTE_ABORT: rank 0 aborted: direct peer rank 2 left');
    expect(parseRankErrorLine(line)).toBe('REMOTE_ABORT: rank 0 aborted: direct peer rank 2 left');
    expect(parseRankErrorLine('a line of the program')).toBeNull();
  });

  it('names the ranks its message names, one by one and in lists, and no number that is not a rank', () => {
    expect(ranksNamedBy('REMOTE_ABORT: rank 0 aborted: direct peer rank 2 left')).toEqual([0, 2]);
    expect(ranksNamedBy('TIMEOUT: allReduce #3 timed out after 5000 ms: missing ranks [1,3]')).toEqual([1, 3]);
    expect(ranksNamedBy('TIMEOUT: ranks [] have not joined; rank 12 is late')).toEqual([12]);
    expect(ranksNamedBy('INVALID_CONFIGURATION: GX1_P2P_RAILS must be an integer in 1..=64, got "ranks"')).toEqual([]);
    expect(ranksNamedBy('frank 3 and ranks 4')).toEqual([]);
  });
});
