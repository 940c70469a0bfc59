/**
 * Whether an error message names `rank` the way rxccl's messages name ranks: `rank 2`,
 * `direct peer rank 2 left`, `ranks [1,2]`.
 */
export function namesRank(message: string, rank: number): boolean {
  for (const [, list] of message.matchAll(/\branks? \[?(\d+(?:, ?\d+)*)\]?/g)) {
    if (list!.split(',').some((named) => Number(named) === rank)) return true;
  }
  return false;
}
