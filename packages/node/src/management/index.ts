// The node's management HTTP API (RabbitMQ-shaped), served by ManagementServer.

export type { ApiErrorCode } from './api-error.ts';
export { ApiError } from './api-error.ts';
export type { ApiRequest, ApiResponse } from './api-types.ts';
export type { BasicAuthOptions } from './basic-auth.ts';
export { BasicAuthenticator } from './basic-auth.ts';
export { ManagementApi } from './management-api.ts';
export type { ManagementServerOptions } from './management-server.ts';
export { DEFAULT_MANAGEMENT_PORT, ManagementListenError, ManagementServer } from './management-server.ts';
export type { QueueReplicaOps } from './queue-replicas-api.ts';
export { MAX_BODY_BYTES } from './request-body.ts';
export type { Json, QueueLiveState, QueueReplicaNames } from './views.ts';
