# The two set-up commands (see README): `make run` and `make test`.
.PHONY: run test test-env

run:
	python3 -m pip install . && amqgen render --lang python --out generated/python

test-env:
	scripts/test-env

test: test-env
	.venv/bin/python -m pytest $(PYTEST_ARGS)
