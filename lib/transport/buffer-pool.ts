/**
 * Reusable scratch buffers. On this class of machine the first touch of freshly allocated memory
 * costs far more than copying into warm memory (a 16 MiB allocation can cost ten times the kernel
 * that fills it), so buffers that live only for one operation (a reduction's input, say) are
 * recycled instead of left to the garbage collector.
 *
 * Buffers come in power-of-two size classes; `take` hands out a view of exactly the size asked
 * for, `give` returns it. Only buffers this pool made are taken back, at most `perClass` wait per
 * size class and at most `maxIdleBytes` in all, so an idle pool holds bounded memory. Nothing may
 * use a view after giving it.
 */
/** The smallest request a pool serves from recycled memory (see the constructor). */
export const DEFAULT_POOLED_BYTES = 4 * 1024;

export class BufferPool {
  private readonly free = new Map<number, ArrayBuffer[]>();
  private readonly owned = new WeakSet<ArrayBuffer>();
  /** What waits in `free` (a buffer given back twice is kept once). */
  private readonly idle = new Set<ArrayBuffer>();
  private idleBytes = 0;

  constructor(
    /**
     * Smaller requests are plain allocations. V8 keeps typed arrays of up to 64 bytes on its heap;
     * a larger one gets a backing store of its own, counted as external memory, and a few of those
     * per call (a mid-size exchange's messages) drive V8 into major collections that cost more than
     * the transfers.
     */
    private readonly minBytes = DEFAULT_POOLED_BYTES,
    private readonly perClass = 2,
    private readonly maxIdleBytes = Number.POSITIVE_INFINITY,
  ) {}

  take(bytes: number): Uint8Array {
    if (bytes < this.minBytes) return new Uint8Array(bytes);
    const size = sizeClass(bytes);
    const reused = this.free.get(size)?.pop();
    if (reused !== undefined) {
      this.idle.delete(reused);
      this.idleBytes -= size;
    }
    return new Uint8Array(reused ?? this.allocate(size), 0, bytes);
  }

  give(view: Uint8Array): void {
    const buffer = view.buffer as ArrayBuffer;
    if (!this.owned.has(buffer) || view.byteOffset !== 0) return;
    const list = this.free.get(buffer.byteLength) ?? [];
    if (list.length >= this.perClass || this.idleBytes + buffer.byteLength > this.maxIdleBytes || this.idle.has(buffer)) return;
    this.idle.add(buffer);
    this.idleBytes += buffer.byteLength;
    list.push(buffer);
    this.free.set(buffer.byteLength, list);
  }

  private allocate(size: number): ArrayBuffer {
    const buffer = new ArrayBuffer(size);
    this.owned.add(buffer);
    return buffer;
  }
}

function sizeClass(bytes: number): number {
  return 2 ** Math.ceil(Math.log2(bytes));
}
