export type { BrokerOptions, Session } from './broker/broker.ts';
export { Broker } from './broker/broker.ts';
export { CONFIG_KEYS } from './cli/server-config.ts';
export { createLogger, silentLogger } from './logging/logger.ts';
export type { TestBreak } from './test-support/test-breaks.ts';
export { TEST_BREAK_ENV, TEST_BREAKS } from './test-support/test-breaks.ts';
export type { WsServerOptions } from './transport/ws/server.ts';
export { ListenError, WsServer } from './transport/ws/server.ts';
