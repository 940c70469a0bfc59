/**
 * After how long a collective still waiting for ranks is reported, with the ranks it waits for:
 * by the coordinator where the collective passes it, by the waiting rank itself where it does not
 * (the mesh, the native plane). One default for both, so a job's warnings come at one pace.
 */
export const DEFAULT_SLOW_COLLECTIVE_MS = 30_000;
