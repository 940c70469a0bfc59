/** What open sessions do when their process is about to exit, each once. */
const leaving = new Set<() => void>();
const leaveAll = () => {
  for (const leave of [...leaving]) leave();
};

/**
 * Runs `leave` when Node finds nothing left to run (`beforeExit`): an idle session holds no
 * socket, so its process is about to end, and it says LEAVE first. One process listener serves
 * every session (a process may hold many). Returns the function that unregisters `leave`.
 */
export function leaveBeforeExit(leave: () => void): () => void {
  if (leaving.size === 0) process.on('beforeExit', leaveAll);
  leaving.add(leave);
  return () => {
    if (!leaving.delete(leave)) return;
    if (leaving.size === 0) process.off('beforeExit', leaveAll);
  };
}
