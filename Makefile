# The two set-up commands (see README): `make run` and `make test`.
.PHONY: run test test-fast test-env

run:
	python3 -m pip install . && amqgen render --lang python --out generated/python

test-env:
	scripts/test-env

# Two workers on this 2-core machine: much of the suite waits on compilers, JVMs and the broker. Tests that
# share the broker, or every spec's Java build, run in one worker each (tests/conftest.py's groups).
test: test-env
	.venv/bin/python -m pytest -n 2 --dist loadscope $(PYTEST_ARGS)

# The inner loop: the model and targets tiers without broker, peer or slow tests (tests/conftest.py's FOLDER_TIERS); the
# format cache is kept between runs in .pytest_cache (tests/conftest.py), as mypy keeps .mypy_cache.
test-fast: test-env
	AMQGEN_TEST_FMTCACHE=$(CURDIR)/.pytest_cache/amqgen-format .venv/bin/python -m pytest -m "(model or targets) and not peers and not slow" $(PYTEST_ARGS)
