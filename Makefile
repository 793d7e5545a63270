# The two commands a newcomer needs (README):
#   make run    the main job on the embedded default inventory (localhost)
#   make test   the whole test suite, every gate (.ci/run calls this)
SHELL := /bin/bash
INVENTORY ?= inventories/localhost
PLAYBOOK ?= playbooks/fingerprint.yml
ARGS ?=

.PHONY: run test setup lint sanity units clean-venv

setup:
	bash scripts/setup-dev.sh

run: setup
	. scripts/env.sh && ansible-playbook -i $(INVENTORY) $(PLAYBOOK) $(ARGS)

test:
	bash tests/run-all.sh

sanity: setup
	tests/ansible-test.sh sanity

units: setup
	tests/ansible-test.sh units

lint: setup
	. scripts/env.sh && ansible-lint

clean-venv:
	rm -rf .venv .cache/collections
