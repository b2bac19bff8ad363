// The receiving side of bodies in parts (proto/styx.proto's `body_size` and BodyPart): a deliver,
// get-ok or return that declares a body is held until its parts have come, then handled whole.
import type { Frame } from '../wire/index.ts';
import { BodyAssembler, ReplyCode, WireError } from '../wire/index.ts';

/** The method frames that may carry a body, as decoded. */
type BodyFrame = Extract<Frame, { method: 'basicDeliver' | 'basicGetOk' | 'basicReturn' }>;

function bodyMessage(f: Frame): { body: Uint8Array; bodySize?: number } | undefined {
  if (f.method === 'basicDeliver') return f.basicDeliver;
  if (f.method === 'basicGetOk') return f.basicGetOk;
  if (f.method === 'basicReturn') return f.basicReturn;
  return undefined;
}

/** One channel's body under way, if any. */
export class IncomingBodies {
  #assembler = new BodyAssembler();
  #head: BodyFrame | null = null;

  /**
   * The frame to handle now: `f` itself, or — on its last part — the method whose body came in
   * parts, its body filled in; undefined while parts are still due. Throws WireError 505
   * UNEXPECTED_FRAME (a part out of place, or another frame between parts) or 501 FRAME_ERROR
   * (parts longer than declared).
   */
  take(f: Frame): Frame | undefined {
    if (f.method === 'bodyPart') {
      const body = this.#assembler.add(f.bodyPart.data);
      if (body === undefined) return undefined;
      const head = this.#head as BodyFrame;
      this.#head = null;
      // Set on the decoded message itself: a decoded protobufjs message must not be spread.
      const message = bodyMessage(head) as { body: Uint8Array; bodySize?: number };
      message.body = body;
      message.bodySize = 0;
      return head;
    }
    if (this.#assembler.assembling) {
      throw new WireError(
        ReplyCode.UNEXPECTED_FRAME,
        `${f.method} on channel ${f.channel} while ${this.#assembler.remaining} bytes of a body were still to come`,
      );
    }
    const size = bodyMessage(f)?.bodySize ?? 0;
    if (size === 0) return f;
    this.#assembler.start(size);
    this.#head = f as BodyFrame;
    return undefined;
  }
}
