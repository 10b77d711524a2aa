"""Containment of the agent's process tree.

The bubblewrap sandbox, its PID-namespace init, the process tree and its freezer, the network
namespace, its gate and proxy, and the log of every Python launch.
"""
