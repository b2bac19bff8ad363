import { describe, expect, it } from 'vitest';
import { defaultTargets, parseTargets } from './target-arg.ts';

describe('parseTargets', () => {
  it('takes each target by name', () => {
    expect(parseTargets('styx')).toEqual(['styx']);
    expect(parseTargets('styx-amqp')).toEqual(['styx-amqp']);
    expect(parseTargets('rabbitmq')).toEqual(['rabbitmq']);
  });

  it('keeps both as the SDK column beside RabbitMQ, and all as the three columns', () => {
    expect(parseTargets('both')).toEqual(['styx', 'rabbitmq']);
    expect(parseTargets('all')).toEqual(['styx', 'styx-amqp', 'rabbitmq']);
  });

  it('takes a comma list in its order, each target once', () => {
    expect(parseTargets('styx-amqp,rabbitmq')).toEqual(['styx-amqp', 'rabbitmq']);
    expect(parseTargets('rabbitmq, styx')).toEqual(['rabbitmq', 'styx']);
    expect(parseTargets('styx,both,styx-amqp,all')).toEqual(['styx', 'rabbitmq', 'styx-amqp']);
  });

  it('refuses unknown names and empty items, naming them', () => {
    expect(() => parseTargets('amqp')).toThrow(/unknown target 'amqp'/);
    expect(() => parseTargets('Styx')).toThrow(/unknown target 'Styx'/);
    expect(() => parseTargets('styx,,rabbitmq')).toThrow(/empty item/);
    expect(() => parseTargets('')).toThrow(/empty item/);
    expect(() => parseTargets('styx,')).toThrow(/empty item/);
  });
});

describe('defaultTargets', () => {
  it('runs every column, RabbitMQ only when installed', () => {
    expect(defaultTargets(true)).toEqual(['styx', 'styx-amqp', 'rabbitmq']);
    expect(defaultTargets(false)).toEqual(['styx', 'styx-amqp']);
  });
});
