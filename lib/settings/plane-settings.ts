/**
 * The values of the native data plane's settings (`GX1_DATA_PLANE`, `GX1_SINGLE_COPY`, `GX1_SHARED_MEMORY`), here
 * so that the settings table parses them; what they do is the session's (session/data-plane-setting.ts).
 */

/**
 * Who moves a tcp_peer session's collective data: `native`, the addon's data plane (a C++ thread
 * over data links of its own; docs/architecture.md), or `js`, the event loop over the mesh. A rank
 * offers the plane in its endpoint publication unless it is `js` (docs/protocol.md 8.3), and every
 * rank decides from the table alike (`usesNativeDataPlane`): the job runs it where every rank
 * offers it, on one host or many; ranks asking for `native` where some rank offers nothing make it
 * fail at set-up, naming them.
 */
export type DataPlaneSetting = 'native' | 'js' | 'auto';

export const DATA_PLANE_SETTINGS: readonly DataPlaneSetting[] = ['auto', 'native', 'js'];

/**
 * Whether this rank's native data plane takes part in single copy (docs/architecture.md, "Single
 * copy on one host"): `auto`, where the ranks of one host agree on it, a receiver reads a large
 * payload straight out of its sender's memory (only the process that proved to be at the other end
 * of the link: docs/protocol.md 9.9), and where Yama's ptrace scope is 1 any process of this user
 * may read this rank while its session is open (the threat model there); `off`, this rank's
 * payloads all travel its links (its peers' to it too). Ranks may differ: each link is agreed on by
 * its two ends.
 */
export type SingleCopySetting = 'auto' | 'off';

export const SINGLE_COPY_SETTINGS: readonly SingleCopySetting[] = ['auto', 'off'];

/**
 * Whether this rank's native data plane takes part in shared memory (docs/architecture.md, "Shared
 * memory on one host"): `auto`, where both ends of a link of one host agree, every header goes
 * through a ring in a segment the two processes share (its payload too, in fragments of 8 KiB, but one
 * single copy carries), offered
 * only to the process that proved to be at the link's other end and mapped by no other; `off`, this
 * rank's links keep TCP both ways. Ranks may differ: each link is agreed on by its two ends.
 */
export type SharedMemorySetting = 'auto' | 'off';

export const SHARED_MEMORY_SETTINGS: readonly SharedMemorySetting[] = ['auto', 'off'];
