// The public surface shared by the Node and browser entries (everything but connect()).
export type { ChannelEvents } from './channel/channel.ts';
export { Channel, ConfirmChannel } from './channel/channel.ts';
export type * from './channel/types.ts';
export type { Connect, ConnectUrl, RecoveringSocketOptions } from './connect/connect.ts';
export type { Credentials } from './connect/credentials.ts';
export { credentials } from './connect/credentials.ts';
export type { RecoveringConnectionEvents, RecoverOptions } from './connect/recovering-connection.ts';
export { RecoveringConnection } from './connect/recovering-connection.ts';
export type { ConnectOptions, SocketOptions } from './connect/target.ts';
export { DEFAULT_HIGH_WATER_MARK } from './connect/target.ts';
// ChannelModel: amqplib's name for what connect() resolves with (the Connection).
export type { Connection as ChannelModel, ConnectionEvents } from './connection/connection.ts';
export { Connection } from './connection/connection.ts';
export {
  ConfirmError,
  GlobalPrefetchError,
  HeartbeatTimeoutError,
  IllegalOperationError,
  MessageTooLargeError,
  NodesUnreachableError,
  ProtocolError,
  ServerCloseError,
} from './errors.ts';
export { SDK_VERSION } from './version.ts';
export { DEFAULT_FRAME_MAX, DEFAULT_PORT, ReplyCode } from './wire/index.ts';
