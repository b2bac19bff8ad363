// Shared by the router tests: a machine with vhost '/' and helpers to declare and bind.

import type { FieldTable, FieldValue } from '@styx/client/wire';
import { bootstrapCommands, MetadataMachine } from '../metadata/metadata-machine.ts';
import type { ExchangeType, MetadataCommand, MetadataReply } from '../metadata/types.ts';

export function table(entries: Record<string, FieldValue>): FieldTable {
  return { entries: Object.entries(entries).map(([key, value]) => ({ key, value })) };
}

export class Fixture {
  readonly m = new MetadataMachine();

  constructor() {
    for (const c of bootstrapCommands({ passwordHash: 'h' })) this.run(c);
  }

  run(command: MetadataCommand): MetadataReply {
    const reply = this.m.apply(command);
    if (reply.type !== 'ok') throw new Error(`${reply.code} ${reply.text}`);
    return reply;
  }

  exchange(name: string, type: ExchangeType, internal = false): this {
    this.run({
      type: 'declareExchange',
      vhost: '/',
      name,
      exchangeType: type,
      durable: true,
      autoDelete: false,
      internal,
      arguments: { entries: [] },
    });
    return this;
  }

  queue(...names: string[]): this {
    for (const name of names) {
      this.run({
        type: 'declareQueue',
        vhost: '/',
        name,
        durable: true,
        exclusiveOwner: undefined,
        autoDelete: false,
        arguments: { entries: [] },
        groupId: name,
        serverNamed: name.startsWith('amq.gen-'),
      });
    }
    return this;
  }

  bind(source: string, queue: string, key = '', args: FieldTable = { entries: [] }): this {
    this.run({
      type: 'bind',
      vhost: '/',
      source,
      destinationKind: 'queue',
      destination: queue,
      routingKey: key,
      arguments: args,
    });
    return this;
  }

  bindExchange(source: string, destination: string, key = '', args: FieldTable = { entries: [] }): this {
    this.run({
      type: 'bind',
      vhost: '/',
      source,
      destinationKind: 'exchange',
      destination,
      routingKey: key,
      arguments: args,
    });
    return this;
  }

  unbind(source: string, queue: string, key = '', args: FieldTable = { entries: [] }): this {
    this.run({
      type: 'unbind',
      vhost: '/',
      source,
      destinationKind: 'queue',
      destination: queue,
      routingKey: key,
      arguments: args,
    });
    return this;
  }
}
