"""The simulated compute node: the clientmount service and daemon a node worker drives."""
