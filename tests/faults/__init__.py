"""The fault harness: a TCP fault proxy, broker-side faults, a scripted misbehaving server, the fault matrix as
data and the drivers that run it on every generated client (tests/amqp0/clients/test_fault_matrix.py runs it)."""
