"""The AMQP 0-x family (0-8, 0-9, 0-9-1 and vendor variants): one typed, lowered model of classes, methods,
bits and flag words, its plans (codec, behaviour), reference codec, corpus and diff."""
