/**
 * Frames waiting for one write to a stream. Every `Stream.send` goes through yamux, noise (a cipher
 * set up per write) and a socket write on its own: their cost is per write, not per byte, so the
 * frames a turn produces for one stream go out together as one buffer.
 */
export class FrameBatch<T = undefined> {
  #frames: Uint8Array[] = [];
  #tags: T[] = [];
  #bytes = 0;

  get bytes(): number {
    return this.#bytes;
  }

  get length(): number {
    return this.#frames.length;
  }

  push(frame: Uint8Array, tag: T): void {
    this.#frames.push(frame);
    this.#tags.push(tag);
    this.#bytes += frame.byteLength;
  }

  /** Forget every frame (a stream that broke). */
  clear(): void {
    this.#frames = [];
    this.#tags = [];
    this.#bytes = 0;
  }

  /**
   * Take the frames whose tag `keep` accepts (all when absent), as one buffer (the frame itself
   * when only one is kept), or undefined when none is; the batch is empty afterwards.
   */
  take(keep?: (tag: T) => boolean): Uint8Array | undefined {
    const frames = this.#frames;
    const tags = this.#tags;
    this.clear();
    let kept = frames;
    if (keep !== undefined) {
      kept = [];
      for (let i = 0; i < frames.length; i++) if (keep(tags[i] as T)) kept.push(frames[i] as Uint8Array);
    }
    if (kept.length <= 1) return kept[0];
    let size = 0;
    for (const frame of kept) size += frame.byteLength;
    const out = new Uint8Array(size);
    let pos = 0;
    for (const frame of kept) {
      out.set(frame, pos);
      pos += frame.byteLength;
    }
    return out;
  }
}
