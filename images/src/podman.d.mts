/** `podman run` and the flags every run here needs (runc, rlimits the host allows). */
export function podmanRun(): string[];
