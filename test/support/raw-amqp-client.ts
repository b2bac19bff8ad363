// A raw AMQP 0-9-1 client for the tests that must send what no real client sends (a wrong header,
// an oversized frame, a method on a channel never opened, silence instead of heartbeats): bytes
// out through the node's own codec, commands in through its frame parser and assembler.
import type { Socket } from 'node:net';
import { connect } from 'node:net';
import { amqp091 } from '@styx/node';

type Command = Exclude<amqp091.AmqpCommand, { kind: 'heartbeat' }>;

export class RawAmqpClient {
  readonly socket: Socket;
  /** Every byte received (for the wrong-header test). */
  readonly received: Buffer[] = [];
  readonly commands: Command[] = [];
  heartbeats = 0;
  readonly closed: Promise<void>;
  #parser = new amqp091.FrameParser({ frameMax: 1 << 20 });
  #assembler = new amqp091.CommandAssembler();
  #waiters: Array<() => void> = [];

  private constructor(socket: Socket) {
    this.socket = socket;
    this.closed = new Promise((resolve) => socket.once('close', () => resolve()));
    socket.on('error', () => undefined);
    socket.on('data', (chunk: Buffer) => {
      this.received.push(chunk);
      try {
        this.#parser.push(chunk, (frame) => {
          const command = this.#assembler.push(frame);
          if (command === undefined) return;
          if (command.kind === 'heartbeat') this.heartbeats++;
          else this.commands.push(command);
        });
      } catch {
        // not frames (the wrong-header answer): kept in `received`
      }
      for (const wake of this.#waiters.splice(0)) wake();
    });
    socket.on('close', () => {
      for (const wake of this.#waiters.splice(0)) wake();
    });
  }

  static async open(port: number): Promise<RawAmqpClient> {
    const socket = connect(port, '127.0.0.1');
    await new Promise<void>((resolve, reject) => {
      socket.once('connect', resolve);
      socket.once('error', reject);
    });
    return new RawAmqpClient(socket);
  }

  send(bytes: Uint8Array): void {
    this.socket.write(bytes);
  }

  method(channel: number, method: amqp091.AmqpMethodInit): void {
    this.send(amqp091.encodeMethodFrame(channel, method));
  }

  /**
   * The next command named `name` (or any of the names), waiting at most `ms`, or an error saying
   * what came instead.
   */
  async next(name: string | readonly string[], ms = 10_000): Promise<Command> {
    const names: readonly string[] = typeof name === 'string' ? [name] : name;
    const deadline = Date.now() + ms;
    for (;;) {
      const at = this.commands.findIndex((c) => names.includes(c.method.name));
      if (at >= 0) return this.commands.splice(at, 1)[0] as Command;
      if (this.socket.destroyed || Date.now() > deadline) {
        throw new Error(
          `no ${names.join(' or ')}; got ${this.commands.map((c) => c.method.name).join(', ') || 'nothing'}`,
        );
      }
      await new Promise<void>((resolve) => {
        this.#waiters.push(resolve);
        setTimeout(resolve, 100);
      });
    }
  }

  /** Header, start-ok as guest (PLAIN), tune-ok with `tune`, open '/'. */
  async handshake(tune: { frameMax?: number; heartbeat?: number } = {}): Promise<void> {
    this.send(amqp091.PROTOCOL_HEADER);
    await this.next('connection.start');
    this.method(0, {
      name: 'connection.start-ok',
      args: { clientProperties: { entries: [] }, mechanism: 'PLAIN', response: '\0guest\0guest' },
    });
    await this.next('connection.tune');
    this.method(0, {
      name: 'connection.tune-ok',
      args: { channelMax: 0, frameMax: tune.frameMax ?? 4096, heartbeat: tune.heartbeat ?? 0 },
    });
    this.method(0, { name: 'connection.open', args: { virtualHost: '/' } });
    await this.next('connection.open-ok');
  }

  close(): void {
    this.socket.destroy();
  }
}
