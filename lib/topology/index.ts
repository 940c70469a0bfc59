export * from './collective-topology.js';
export * from './probe-buckets.js';
export * from './probe-options.js';
export * from './probe.js';
export * from './best-ring-order.js';
export * from './ring-tuning.js';
export * from './topology-groups.js';
export * from './link-tuning.js';
