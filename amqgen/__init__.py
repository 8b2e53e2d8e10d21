"""amqgen: AMQP 0-8 / 0-9 / 0-9-1 XML specification -> typed model -> generated bindings."""

__version__ = "0.1.0"
