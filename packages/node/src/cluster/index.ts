export type { ClusterEvent, ClusterEventHandler, ClusterEventKind } from './cluster-gossip.ts';
export { CLUSTER_EVENTS_TOPIC, ClusterGossip, parseClusterEvent } from './cluster-gossip.ts';
export type { ClusterRpcOptions, RpcHandler, RpcRequest, RpcResponse } from './cluster-rpc.ts';
export {
  ClusterRpc,
  DEFAULT_RPC_MAX_MESSAGE_BYTES,
  DEFAULT_RPC_TIMEOUT_MS,
  decodeRpcRequest,
  decodeRpcResponse,
  encodeRpcRequest,
  encodeRpcResponse,
  MAX_CONCURRENT_RPC_STREAMS,
  MAX_RPC_ERROR_TEXT_BYTES,
  MAX_RPC_NAME_BYTES,
  RPC_PROTOCOL,
  RpcError,
  RpcErrorCode,
  RpcProtocolError,
  RpcRemoteError,
  RpcTimeoutError,
} from './cluster-rpc.ts';
export type { ClusterSecretSource } from './cluster-secret.ts';
export {
  CLUSTER_SECRET_ENV,
  loadClusterSecret,
  MIN_CLUSTER_SECRET_LENGTH,
  swarmKeyFromSecret,
} from './cluster-secret.ts';
export type { ClusterGaterOptions } from './connection-gater.ts';
export { ClusterGater, MAX_RATE_LIMITED_PEERS, REFUSAL_LOG_INTERVAL_MS } from './connection-gater.ts';
export {
  ClusterError,
  ClusterSecretInvalidError,
  ClusterSecretMissingError,
  FrameTooLargeError,
  NodeIdentityError,
  PeerAddressError,
} from './errors.ts';
export { libp2pLogBridge } from './libp2p-log-bridge.ts';
export type { ClusterLibp2p, ClusterNodeOptions, ClusterServices } from './libp2p-node.ts';
export { createClusterNode, DEFAULT_INBOUND_CONNECTIONS_PER_SECOND, listenAddress } from './libp2p-node.ts';
export type { Libp2pTransportOptions } from './libp2p-transport.ts';
export {
  DEFAULT_DIAL_TIMEOUT_MS,
  DEFAULT_MAX_FRAME_BYTES,
  Libp2pTransport,
  RAFT_PROTOCOL,
} from './libp2p-transport.ts';
export type { NodeIdentity } from './node-identity.ts';
export { loadNodeIdentity, NODE_KEY_FILE } from './node-identity.ts';
export { nodeMultiaddr, peerMultiaddr } from './peer-address.ts';
export type { Assignment, LeaderTransfer } from './placement.ts';
export { rebalanceLeaders } from './placement.ts';
export type { BatchedOutcome, BatchedSend } from './queue-batch-codec.ts';
export { decodeBatch, encodeBatchAnswer } from './queue-batch-codec.ts';
export type { QueueLinkHandler, QueueLinkOptions } from './queue-link.ts';
export { QueueLink } from './queue-link.ts';
export { DeliveryEncoder, decodeDelivery, encodeDelivery, QueueOp } from './queue-rpc-codec.ts';
export { RemoteSendBatches } from './remote-send-batches.ts';
