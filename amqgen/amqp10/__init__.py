"""The AMQP 1.0 family (OASIS AMQP 1.0, ISO/IEC 19464): its own typed model, read from the OASIS XML with the
0-x loader's safety, naming and diagnostics. 0-x classes, methods, bit packing and flag words have no
counterpart here, so the two families share services, not a model."""
