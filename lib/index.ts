/** rxccl: reactive collective communication for Node.js. See README.md and docs/. */
export {
  type RxcclErrorCode,
  RxcclError,
  ProtocolError,
  ConfigurationError,
  WrongSessionError,
  WrongDestinationError,
  RemoteAbortError,
  TimeoutError,
  ChannelClosedError,
  RankLostError,
  AuthenticationError,
  KernelError,
  ObjectTooLargeError,
  UnserializableObjectError,
  SettingsDifferError,
  failureText,
} from './errors.js';
export {
  ANY_RANK,
  ANY_COUNT,
  FRAME_HEADER_BYTES,
  MAX_FRAME_PAYLOAD_BYTES,
  PROTOCOL_VERSION,
  FLAG_PAYLOAD,
  FLAG_P2P_CHANNEL,
  FLAG_COUNTS_PREFIX,
  FLAG_PEER_DATA,
  Opcode,
  ElementType,
  elementWidth,
  type DType,
  type ReduceOp,
  REDUCE_OPS,
  UniqueId,
  type Frame,
  type FrameHeader,
  type HeaderFields,
  makeFrame,
  encodeHeader,
  decodeHeader,
  decodeFrames,
  FrameDecoder,
  CollectiveAgreement,
  type OperationDescriptor,
} from './protocol/index.js';
export type { Tensor, TaggedTensor, TypedArray, TensorOf, DTypeTensors } from './tensor.js';
export type { CollectiveTransport } from './transport/transport-kind.js';
export { generateSecret } from './transport/job-secret.js';
export type { TlsOptions } from './transport/tls-settings.js';
export { Coordinator, type CoordinatorOptions } from './coordinator/coordinator.js';
export { BusyWindow } from './transport/busy-window.js';
export { coordinatorBusyWindow } from './launch/coordinator-busy-window.js';
export type { CoordinatorEvent, SubmittedCollective } from './coordinator/coordinator-events.js';
export type { DebugLevel } from './diagnostics/debug-log.js';
export { recordFlight, type FlightRecordingOptions, type FlightRecordReason } from './session/flight-recording.js';
export { RankSession, type Communicator } from './session/rank-session.js';
export type { SplitOptions } from './communicator/split-plan.js';
export type { BroadcastOptions, OutputOptions, ReductionOptions } from './session/collective-requests.js';
export type { FusionOptions } from './session/fused-all-reduce.js';
export { DEFAULT_BUCKET_BYTES } from './collectives/fusion/buckets.js';
export type { ProbedMessage, RailOption, ReceiveShape } from './session/point-to-point.js';
export type { SessionEvent } from './session/events.js';
export type { ExchangeOptions } from './session/exchange-options.js';
export type { SessionOptions } from './session/session-options.js';
export { openSession, connect } from './launch/open-session.js';
export * from './session/operators/index.js';
export {
  CollectiveTopology,
  type TopologyLink,
  type TopologyRailLink,
  type TopologyAggregateLink,
  type TopologyProbeOptions,
  bestRingOrder,
  ringMetrics,
  type TopologyGroups,
} from './topology/index.js';
export type { CollectivePlan, PlannedCandidate } from './collectives/plan.js';
export { scheduleReduce, reduceSlices, scheduleAccumulate, scheduleDivide, validateReduction, kernelBackend } from './kernels/index.js';
export { discoverJob } from './launch/discover-job.js';
export { readSettings, type Setting, type Settings } from './settings/read-settings.js';
export type { DiscoveredJob } from './launch/job-environment.js';
