"""The simulated Flux: the job manager, dws-jobtap's behaviour, a scheduler, the perilog."""
