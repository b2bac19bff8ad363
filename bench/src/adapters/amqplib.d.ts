// amqplib ships no types; the bench declares the promise API it uses (see client-api.ts).
declare module 'amqplib' {
  import type { BenchConnection } from './client-api.ts';

  export function connect(url: string, socketOptions?: { noDelay?: boolean }): Promise<BenchConnection>;
}
