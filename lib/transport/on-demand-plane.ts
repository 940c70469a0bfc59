import { DataPlane, type DataPlaneEngine, type DataPlaneSettings } from './data-plane.js';
import type { PeerMesh } from './peer-mesh.js';

/**
 * The native data plane over the data links of `mesh`, a mesh whose links open on demand
 * (docs/architecture.md, "Links on demand"): the engine starts with no link, and the first run of
 * a schedule opens the pairs it names (`PeerMesh.openDataLink`). The world's plane and every
 * communicator's are this one, so a communicator's links open, fail and are named as the world's.
 */
export function onDemandPlane(Engine: DataPlaneEngine, mesh: PeerMesh, settings: DataPlaneSettings): DataPlane {
  const { rank, worldSize } = mesh.identity;
  return DataPlane.open(Engine, rank, worldSize, mesh.dataLinks!, settings, (peer, rail, waitMs) => mesh.openDataLink(peer, rail, waitMs));
}
