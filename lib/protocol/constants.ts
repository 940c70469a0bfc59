/** Fixed numbers of the GX1 wire format; docs/protocol.md explains each. */

/** "GX1F" read as a little-endian u32 (bytes 0x47 0x58 0x31 0x46). */
export const PROTOCOL_MAGIC = 0x46315847;
/** The GX1 wire version in every header (byte 4); a frame of another version is refused. */
export const PROTOCOL_VERSION = 1;
/** Every frame starts with a header of this many bytes (docs/protocol.md 3). */
export const FRAME_HEADER_BYTES = 96;
/** Bytes covered by the header checksum: everything before it. */
export const HEADER_CHECKSUM_OFFSET = 92;
/** The largest payload one frame may declare (1 GiB). Nothing larger is ever allocated. */
export const MAX_FRAME_PAYLOAD_BYTES = 1 << 30;
/** Rank field value meaning "no particular rank" (any source, no root, no destination). */
export const ANY_RANK = 0xffffffff;
export const MAX_U64 = 0xffff_ffff_ffff_ffffn;
/**
 * The elementCount of a point-to-point Receive request that takes a message of any count of its
 * element type (docs/protocol.md 10.3): the largest count a header holds, which no message can
 * have (no payload passes 2^30 bytes).
 */
export const ANY_COUNT = Number.MAX_SAFE_INTEGER;

/** Header flag bits (u16 at byte 12). Unknown bits are rejected. */
export const FLAG_PAYLOAD = 0x0001;
/** A point-to-point frame: `tag` is the user's tag and the rail is in the header (docs/protocol.md 7). */
export const FLAG_P2P_CHANNEL = 0x0002;
/** The payload starts with one u64 count per rank (all-to-all-v's and gather's variable parts). */
export const FLAG_COUNTS_PREFIX = 0x0004;
/** A collective request whose data travels over the direct peer mesh: the coordinator only agrees. */
export const FLAG_PEER_DATA = 0x0008;
/**
 * A fragment of a point-to-point message cut into frames (docs/protocol.md 10.7): more fragments follow,
 * and elementCount counts the elements from this fragment's first to the message's last.
 */
export const FLAG_MORE = 0x0010;
export const KNOWN_FLAGS = FLAG_PAYLOAD | FLAG_P2P_CHANNEL | FLAG_COUNTS_PREFIX | FLAG_PEER_DATA | FLAG_MORE;
