"""The long-running processes: the watcher, the hooks Flux calls, the Flux bridge."""
